import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { docker } from '@ca-sandbox/docker/cli';
import { hasControlCharacter } from '@ca-sandbox/docker/contracts';
import { afterAll, describe, expect, it } from 'vitest';
import { goModule, hostAddress, Mirror, pypiTree, pythonSdist, pythonWheel } from './mirrors.js';

// End to end through the CLI bin (it needs the built packages: `pnpm build`).
const BIN = fileURLToPath(new URL('../../cli/bin/ca-sandbox.js', import.meta.url));
const GO_FIXTURE = fileURLToPath(new URL('./fixtures/go-mod/', import.meta.url));

interface BinResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** The bin with the local base images (official names cannot be pulled here) and `env` on top. */
function runBin(args: string[], env: Record<string, string> = {}): Promise<BinResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      {
        env: { ...process.env, CA_SANDBOX_BASE_IMAGE_GO: 'ca-sbx-base:go', NO_COLOR: '1', ...env },
        maxBuffer: 64 * 1024 * 1024,
      },
      (error, stdout, stderr) =>
        resolve({ code: error ? Number((error as { code?: unknown }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** Every container, volume and network labeled with sandbox `id`. */
async function remainingObjects(id: string): Promise<string[]> {
  const filter = `label=ca.sandbox.id=${id}`;
  const out: string[] = [];
  for (const argv of [
    ['ps', '-aq', '--filter', filter],
    ['volume', 'ls', '-q', '--filter', filter],
    ['network', 'ls', '-q', '--filter', filter],
  ])
    out.push(...(await docker(argv)).stdout.split('\n').filter(Boolean));
  return out;
}

describe('a mirror named in the configuration file (real engine, through the bin)', () => {
  const id = `sbx-${randomUUID().slice(0, 8)}`;
  const work = mkdtempSync(join(tmpdir(), 'ca-sbx-mirror-config-'));
  let mirror: Mirror | undefined;

  afterAll(async () => {
    await runBin(['destroy', id]);
    await mirror?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  it('reaches the install through the egress gateway: the install succeeds and egress shows it allowed', async () => {
    const greet = goModule('example.com/greet', 'v1.0.0', {
      'go.mod': 'module example.com/greet\n\ngo 1.22\n',
      'greet.go': 'package greet\n\nfunc Hello(name string) string { return "hello, " + name }\n',
    });
    // On this host's address: the gateway refuses private and host ranges unless the user named
    // them, as a configured mirror is.
    mirror = await new Mirror('goproxy', greet.tree).start(hostAddress());
    const repo = join(work, 'app');
    cpSync(GO_FIXTURE, repo, { recursive: true });
    writeFileSync(join(repo, 'go.sum'), greet.goSum);
    const config = join(work, 'config.json');
    writeFileSync(config, JSON.stringify({ mirrors: { goProxy: mirror.url } }));
    // The file alone names the mirror: no variable of the caller does.
    const env = { CA_SANDBOX_CONFIG: config, CA_SANDBOX_GOPROXY: '' };
    const shown = await runBin(['config', '--json'], env);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain(mirror.url);

    const created = await runBin(
      ['create', repo, '--name', id, '--network', 'clone-then-cut', '--json'],
      env,
    );
    expect(created.code, created.stderr).toBe(0);
    expect(JSON.parse(created.stdout)).toMatchObject({ id, provider: 'go', depsInstalled: true });

    const egress = await runBin(['egress', id, '--json'], env);
    expect(egress.code, egress.stderr).toBe(0);
    const decisions = JSON.parse(egress.stdout) as { phase: string; destination: string; allowed: boolean }[];
    const fromMirror = decisions.filter(
      (row) => row.phase === 'install' && row.destination.startsWith(mirror?.url ?? '-'),
    );
    expect(fromMirror.length, egress.stdout).toBeGreaterThan(0);
    expect(fromMirror.every((row) => row.allowed)).toBe(true);

    // The report says why it lists no install-time code for a Go install.
    const report = JSON.parse((await runBin(['report', id, '--json'])).stdout);
    expect(report.install.scripts).toMatchObject({ recorded: true, declared: [] });
    expect(report.install.scripts.note).toMatch(/^go mod download runs no code of the modules/);
    expect((await runBin(['report', id])).stdout).toContain('scripts    go mod download runs no code');

    const destroyed = await runBin(['destroy', id, '--json']);
    expect(destroyed.code, destroyed.stderr).toBe(0);
    expect(await remainingObjects(id)).toEqual([]);
  }, 900_000);
});

describe('the report names what pip built from source (real engine, through the bin)', () => {
  const marker = `p${Date.now().toString(36)}`;
  it("python: the packages pip built from source (their build code ran), even one that rewrote pip's report; wheels not", async () => {
    // The hider's build removes its own row from pip's report and prints a forged marker with
    // escapes: pip's own line still names it, and the forged row is dropped.
    const hide = [
      'import json',
      `path = "/tmp/ca-sbx-pip-report.json"`,
      'r = json.load(open(path))',
      `r["install"] = [i for i in r["install"] if i["metadata"]["name"] != "ca-hider-${marker}"]`,
      'json.dump(r, open(path, "w"))',
      `print('ca-sandbox-install-script: {"p": "x\\u001b]52;c;aGk=\\u0007", "v": "1", "s": ["sdist-build"]}')`,
    ].join('\n');
    const mirror = await new Mirror(
      'pypi-builds',
      pypiTree({
        [`ca-built-${marker}`]: [pythonSdist(`ca-built-${marker}`, '1.0')],
        [`ca-hider-${marker}`]: [pythonSdist(`ca-hider-${marker}`, '2.0', hide)],
        [`ca-wheel-${marker}`]: [pythonWheel(`ca-wheel-${marker}`, '3.0')],
      }),
    ).start(hostAddress());
    const name = `sbx-${randomUUID().slice(0, 8)}`;
    const dir = mkdtempSync(join(tmpdir(), 'ca-sbx-pip-builds-'));
    try {
      const repo = join(dir, 'repo');
      mkdirSync(repo);
      writeFileSync(
        join(repo, 'requirements.txt'),
        `ca-built-${marker}==1.0\nca-hider-${marker}==2.0\nca-wheel-${marker}==3.0\n`,
      );
      const config = join(dir, 'config.json');
      writeFileSync(config, JSON.stringify({ mirrors: { pypiIndex: `${mirror.url}/simple/` } }));
      const env = { CA_SANDBOX_CONFIG: config, CA_SANDBOX_PIP_INDEX_URL: '' };
      const created = await runBin(
        ['create', repo, '--json', '--name', name, '--network', 'clone-then-cut'],
        env,
      );
      expect(created.code, created.stderr).toBe(0);
      const imported = await runBin([
        'exec',
        name,
        '--',
        'python3',
        '-c',
        `import ca_wheel_${marker}, ca_built_${marker}`,
      ]);
      expect(imported.code, imported.stderr).toBe(0);
      const report = JSON.parse((await runBin(['report', name, '--json'])).stdout);
      expect(report.install.provider).toBe('python');
      expect(report.install.scripts).toEqual({
        recorded: true,
        declared: [
          { package: `ca-built-${marker}`, version: '1.0', scripts: ['sdist-build'], ignored: false },
          { package: `ca-hider-${marker}`, version: '', scripts: ['sdist-build'], ignored: false },
        ],
        more: 0,
        skippedOwn: [],
      });
      const page = await runBin(['report', name]);
      expect(page.stdout).toContain(
        `scripts    2 installed package(s) declare install scripts: ca-built-${marker}@1.0 (built from source: its build code ran), ca-hider-${marker} (built from source: its build code ran)`,
      );
      for (const line of page.stdout.split('\n')) expect(hasControlCharacter(line), line).toBe(false);
    } finally {
      await runBin(['destroy', name]);
      await mirror.stop();
      rmSync(dir, { recursive: true, force: true });
    }
    expect(await remainingObjects(name)).toEqual([]);
  }, 600_000);
});
