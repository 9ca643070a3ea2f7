import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLAUDE_CODE_VERSION } from '@ca-sandbox/build';
import { dockerInfo, runtimeIsNetworkless } from '@ca-sandbox/docker';
import { docker } from '@ca-sandbox/docker/cli';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type CliResult,
  cli,
  destroyBox,
  destroyLeftovers,
  execBox,
  FIXTURES,
  labeledLeft,
  parseJson,
  uniqueName,
} from './_harness.js';

// One box for the whole file: its image holds Claude Code (a ~400 MB download the first time the
// Claude Code image is built on a machine), so it is built once and every `it` reads the same box.

interface ClaudeRecord {
  id: string;
  container: string;
  image: string;
  network: string;
  runtime: string;
  withClaude: boolean;
  allow: string[];
  toolchain: Record<string, string>;
}

interface EgressRow {
  phase: string;
  destination: string;
  allowed: boolean;
  count: number;
}

const canary = `canary-${randomUUID()}`;
const engine = await dockerInfo();
/** gVisor when it can run the allowlist box here, else runc (and a one-line reason). */
const expectedRuntime =
  engine.runtimes.includes('runsc') && !runtimeIsNetworkless(engine, 'runsc') ? 'runsc' : 'runc';

let home = '';
let created: CliResult;
let box: ClaudeRecord;

afterAll(async () => {
  await destroyLeftovers();
  if (box) await cli(['destroy', box.id]);
  if (home) await rm(home, { recursive: true, force: true });
});

beforeAll(async () => {
  // A host with every credential Claude Code reads: the API key, an OAuth token, ~/.claude.
  home = await mkdtemp(join(tmpdir(), 'ca-claude-home-'));
  await mkdir(join(home, '.claude'));
  await writeFile(join(home, '.claude', '.credentials.json'), JSON.stringify({ token: canary }));
  const name = uniqueName('claude');
  created = await cli(
    ['create', join(FIXTURES, 'with-claude'), '--with-claude', '--json', '--name', name],
    {
      ANTHROPIC_API_KEY: canary,
      ANTHROPIC_AUTH_TOKEN: canary,
      CLAUDE_CODE_OAUTH_TOKEN: canary,
      CLAUDE_CONFIG_DIR: join(home, '.claude'),
      HOME: home,
    },
    900_000,
  );
  if (created.exitCode !== 0) await cli(['destroy', name]);
  expect(created.exitCode, created.stderr).toBe(0);
  box = parseJson<ClaudeRecord>(created);
}, 960_000);

/** A CONNECT through the box's gateway, from inside the box (bash's /dev/tcp: no client needed). */
async function connectFromBox(destination: string): Promise<string> {
  const script = `h=\${HTTPS_PROXY#http://}; exec 3<>/dev/tcp/\${h%:*}/\${h##*:} || exit 9
printf 'CONNECT ${destination} HTTP/1.1\\r\\nHost: ${destination}\\r\\n\\r\\n' >&3; head -n 1 <&3`;
  const result = await execBox(box.id, ['bash', '-c', script]);
  return result.stdout.trim();
}

describe('create --with-claude', () => {
  it('records Claude Code, the allowlist of api.anthropic.com:443 alone, and the runtime (with the reason when not gVisor)', () => {
    expect(box).toMatchObject({
      withClaude: true,
      network: 'allowlist',
      allow: ['api.anthropic.com:443'],
      runtime: expectedRuntime,
    });
    expect(box.toolchain.claude).toBe(CLAUDE_CODE_VERSION);
    if (expectedRuntime === 'runc') {
      const reasons = created.stderr.split('\n').filter((line) => line.startsWith('warning: --with-claude:'));
      expect(reasons).toHaveLength(1);
      expect(reasons[0]).toMatch(/runs under runc, sharing the host kernel: gVisor/);
    }
  });

  it('claude runs in the box from a root-owned binary the install could not replace', async () => {
    const version = await execBox(box.id, ['claude', '--version']);
    expect(version.exitCode, version.stderr).toBe(0);
    expect(version.stdout).toContain(`${CLAUDE_CODE_VERSION} (Claude Code)`);
    const owner = await execBox(box.id, [
      'sh',
      '-c',
      'stat -c "%u:%g %a" /usr/local/bin/claude /usr/local/bin; cat /deps/claude-attack.txt',
    ]);
    const [binary, directory, ...attack] = owner.stdout.trim().split('\n');
    expect(binary).toBe('0:0 755');
    expect(directory).toBe('0:0 755');
    // The install's code ran (else this proves nothing) and reached none of it.
    expect(attack).toEqual(['attack done']);
  });

  it('the box reaches api.anthropic.com:443 and nothing else: the gateway refuses any other name by its list', async () => {
    const [gateway] = await gatewaysOf(box.id);
    expect(gateway).toBeDefined();
    const config = await docker(['exec', gateway as string, 'cat', '/tmp/squid.conf']);
    const allowed = config.stdout.split('\n').filter((line) => /^acl r[0-9]+(_ports)? /.test(line));
    expect(allowed).toEqual(['acl r0_ports port 443', 'acl r0 dstdomain -n api.anthropic.com']);
    // No request goes to the API itself: only names off the list, which squid refuses itself.
    expect(await connectFromBox('registry.npmjs.org:443')).toMatch(/^HTTP\/1\.[01] 403/);
    expect(await connectFromBox('example.com:443')).toMatch(/^HTTP\/1\.[01] 403/);
    expect(await connectFromBox('api.anthropic.com:80')).toMatch(/^HTTP\/1\.[01] 403/);
    const egress = await cli(['egress', box.id, '--json']);
    expect(egress.exitCode, egress.stderr).toBe(0);
    const rows = parseJson<EgressRow[]>(egress);
    const boxRows = rows.filter((row) => row.phase === 'box');
    expect(boxRows.filter((row) => row.allowed)).toEqual([]);
    expect(boxRows.map((row) => row.destination).sort()).toEqual([
      'api.anthropic.com:80',
      'example.com:443',
      'registry.npmjs.org:443',
    ]);
    // The build phases reached their registries only (the Claude Code image's: the npm registry).
    for (const row of rows.filter((r) => r.phase === 'claude-code'))
      expect(row.destination).toBe('registry.npmjs.org:443');
    const verify = await cli(['verify', box.id, '--json']);
    expect(verify.exitCode, verify.stdout).toBe(0);
  });

  it('no host credential reaches the box, its container, its image or the Claude Code image', async () => {
    const dump = await execBox(box.id, [
      'sh',
      '-c',
      'env; tr "\\0" "\\n" < /proc/1/environ; ls -a /tmp; cat /tmp/.claude/.credentials.json 2>&1',
    ]);
    expect(dump.stdout).not.toContain(canary);
    expect(dump.stdout).not.toMatch(/^(ANTHROPIC_|CLAUDE_CODE_OAUTH|CLAUDE_CONFIG_DIR)/m);
    expect((await docker(['container', 'inspect', box.container])).stdout).not.toContain(canary);
    for (const image of [box.image, ...(await claudeImages())]) {
      expect((await docker(['history', '--no-trunc', image])).stdout).not.toContain(canary);
      expect((await docker(['image', 'inspect', image])).stdout).not.toContain(canary);
    }
  });

  it('runsc beside --with-claude is refused in one line where runsc has no network (nothing made)', async () => {
    if (!engine.runtimes.includes('runsc') || !runtimeIsNetworkless(engine, 'runsc')) return;
    const name = uniqueName('claude');
    const result = await cli([
      'create',
      join(FIXTURES, 'with-claude'),
      '--with-claude',
      '--runtime',
      'runsc',
      '--name',
      name,
    ]);
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toMatch(
      /^error: runtime runsc cannot run an allowlist box here: gVisor is registered with --network=none/m,
    );
    expect(await labeledLeft(name)).toEqual([]);
  });

  it('destroy leaves nothing of the box or its gateway', async () => {
    await destroyBox(box.id);
    expect(await labeledLeft(box.id)).toEqual([]);
    expect(await gatewaysOf(box.id)).toEqual([]);
  });
});

/** The Claude Code images on this engine (tag `ca-sbx:_claude-code-*`). */
async function claudeImages(): Promise<string[]> {
  const { stdout } = await docker([
    'image',
    'ls',
    '--filter',
    'label=ca.sandbox.cache.claude-code',
    '--format',
    '{{.Repository}}:{{.Tag}}',
  ]);
  return stdout.split('\n').filter((line) => line.startsWith('ca-sbx:_claude-code-'));
}

/** The egress gateway containers of a sandbox, found by their labels. */
async function gatewaysOf(id: string): Promise<string[]> {
  const { stdout } = await docker([
    'container',
    'ls',
    '--all',
    '--filter',
    `label=ca.sandbox.id=${id}`,
    '--filter',
    'label=ca.sandbox.role=gateway',
    '--format',
    '{{.Names}}',
  ]);
  return stdout.split('\n').filter(Boolean);
}
