import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const BIN = fileURLToPath(new URL('../bin/ca-sandbox.js', import.meta.url));
const BUNDLE = fileURLToPath(new URL('../dist/bundle/', import.meta.url));
const META = join(BUNDLE, 'meta.json');
const TRACE = fileURLToPath(new URL('./_trace-imports.mjs', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'ca-sbx-trace-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs the bin and returns the module URLs it loaded (builtins excluded). */
function loaded(args: string[]): { status: number | null; modules: string[] } {
  const out = join(dir, `${Math.random().toString(36).slice(2)}.json`);
  const result = spawnSync(process.execPath, ['--import', TRACE, BIN, ...args], {
    env: { ...process.env, TRACE_IMPORTS_OUT: out, DOCKER_HOST: 'unix:///nonexistent.sock' },
    encoding: 'utf8',
    timeout: 30_000,
  });
  const modules = (JSON.parse(readFileSync(out, 'utf8')) as string[]).filter((url) =>
    url.startsWith('file:'),
  );
  return { status: result.status, modules };
}

// The docker package's contracts entry is constants only (no import): the help and the exec fast
// path may carry it.
const HEAVY =
  /\/lifecycle\/|\/docker\/dist\/(?!contracts\.js|error-base\.js|sanitize\.js)|@modelcontextprotocol|\/zod\/|\/execa\//;

/** The bundle chunks (by file URL) that hold any of the heavy inputs, from esbuild's metafile. */
function chunksHolding(pattern: RegExp): Set<string> {
  if (!existsSync(META)) return new Set();
  const meta = JSON.parse(readFileSync(META, 'utf8')) as {
    outputs: Record<string, { inputs: Record<string, unknown> }>;
  };
  const root = fileURLToPath(new URL('..', import.meta.url));
  return new Set(
    Object.entries(meta.outputs)
      .filter(([, output]) => Object.keys(output.inputs).some((input) => pattern.test(input)))
      .map(([file]) => pathToFileURL(join(root, file)).href),
  );
}
const heavyChunks = chunksHolding(HEAVY);
const heavy = (modules: string[]) => modules.filter((url) => HEAVY.test(url) || heavyChunks.has(url));

describe.skipIf(!existsSync(META))('start-up is lazy (built bundle)', () => {
  it('the metafile names the heavy chunks (so the checks below check something)', () => {
    expect(heavyChunks.size).toBeGreaterThan(2);
  });

  it('--version loads nothing but the bin', () => {
    const { status, modules } = loaded(['--version']);
    expect(status).toBe(0);
    expect(modules).toEqual([
      expect.stringMatching(/bin\/ca-sandbox\.js$/),
      expect.stringMatching(/cli\/package\.json$/),
    ]);
  });

  it.each([['--help'], ['list', '--help'], ['mcp', '--help'], ['exec', '--help'], ['frob']])(
    '`%s` loads no chunk of the lifecycle, docker, zod or the MCP SDK',
    (...args) => {
      const { modules } = loaded(args);
      expect(modules.some((url) => url.startsWith(pathToFileURL(BUNDLE).href))).toBe(true);
      expect(heavy(modules)).toEqual([]);
    },
  );

  it('a plain exec takes the fast path: no commander, zod, execa or docker barrel', () => {
    const { status, modules } = loaded(['exec', 'no-such-box', '--', 'true']);
    expect(status).toBe(125);
    expect(modules.some((url) => url.endsWith('/dist/bundle/fast-exec.cjs'))).toBe(true);
    const commander = chunksHolding(/commander/);
    expect(modules.filter((url) => commander.has(url) || /\/(zod|execa|commander)\//.test(url))).toEqual([]);
    expect(modules.filter((url) => url.endsWith('/docker/dist/index.js'))).toEqual([]);
  });

  it('a plain destroy takes the fast path: no commander, zod, execa, docker barrel or network', () => {
    const { status, modules } = loaded(['destroy', 'no-such-box']);
    // No engine here: the listing fails, a prerequisite.
    expect(status).toBe(3);
    expect(modules.some((url) => url.endsWith('/dist/bundle/fast-destroy.cjs'))).toBe(true);
    const commander = chunksHolding(/commander/);
    expect(modules.filter((url) => commander.has(url) || /\/(zod|execa|commander)\//.test(url))).toEqual([]);
    expect(
      modules.filter((url) => /fast-exec-docker|fast-network|\/docker\/dist\/index\.js/.test(url)),
    ).toEqual([]);
  });

  it('create loads the cold build path (recipes, yaml, the Dockerfile writer) only on a cache miss', () => {
    // No engine here: create stops at the preflight, having loaded what every create loads.
    const source = mkdtempSync(join(dir, 'src-'));
    const { status, modules } = loaded(['create', source, '--json']);
    expect(status).not.toBe(0);
    const lifecycle = chunksHolding(/\/lifecycle\/dist\/create\//);
    expect(modules.some((url) => lifecycle.has(url))).toBe(true);
    const cold = chunksHolding(/\/yaml\/|\/build\/dist\/(recipe|build-image|node-context)\.js$/);
    expect(cold.size).toBeGreaterThan(0);
    expect(modules.filter((url) => cold.has(url))).toEqual([]);
  });

  it("the bundle carries zod's English messages only (its other languages were most of the zod chunk)", () => {
    const meta = JSON.parse(readFileSync(META, 'utf8')) as { inputs: Record<string, unknown> };
    const locales = Object.keys(meta.inputs)
      .filter((input) => /\/zod\/v4\/locales\//.test(input))
      .map((input) => input.split('/').pop());
    expect(locales.sort()).toEqual(['en.js', 'index.js']);
  });

  it('an exec usage error fails before the lifecycle or docker are loaded', () => {
    const { status, modules } = loaded(['exec', 'Bad Id', '--', 'true']);
    expect(status).toBe(125);
    expect(
      modules.filter((url) => /\/lifecycle\/|\/docker\/dist\/|@modelcontextprotocol|\/execa\//.test(url)),
    ).toEqual([]);
  });
});
