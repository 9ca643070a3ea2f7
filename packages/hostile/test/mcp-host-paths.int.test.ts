// Issue 9.9: an agent drives ca-sandbox through MCP. The server may read local sources only under
// the client's MCP roots (or mcp.roots of the configuration file) and write copies only under the
// output root (mcp.outputRoot); symlinks are resolved before the check. Every refusal is a tool
// error naming the root, and the host's ~/.ssh stays as it was.
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, cli, RUNTIMES } from './_harness.js';

type ToolResult = {
  content: { type: string; text: string }[];
  isError?: boolean;
  structuredContent?: Record<string, unknown>;
};

const home = realpathSync(mkdtempSync(join(tmpdir(), 'ca-hostile-mcp-')));
const ssh = join(home, '.ssh');
const project = join(home, 'project');
const outputRoot = join(home, 'out');
const SSH_FILES = {
  authorized_keys: 'ssh-ed25519 AAAA host-key\n',
  id_ed25519: '-----BEGIN OPENSSH PRIVATE KEY-----\nfake\n',
};

function sshUntouched(): void {
  expect(readdirSync(ssh).sort()).toEqual(Object.keys(SSH_FILES).sort());
  for (const [name, content] of Object.entries(SSH_FILES))
    expect(readFileSync(join(ssh, name), 'utf8')).toBe(content);
}

function labeled(id: string): string[] {
  return ['ps', 'volume'].flatMap((kind) =>
    execFileSync(
      'docker',
      kind === 'ps'
        ? ['ps', '-aq', '--filter', `label=ca.sandbox.id=${id}`]
        : ['volume', 'ls', '-q', '--filter', `label=ca.sandbox.id=${id}`],
      { encoding: 'utf8' },
    )
      .split('\n')
      .filter(Boolean),
  );
}

function error(result: unknown): { code: string; message: string; hint?: string } {
  const first = (result as ToolResult).content[0];
  return (JSON.parse(first?.text ?? '{}') as { error: { code: string; message: string; hint?: string } })
    .error;
}

async function connect(roots: string[] | undefined): Promise<Client> {
  const client = new Client(
    { name: 'hostile-agent', version: '0.0.0' },
    roots ? { capabilities: { roots: {} } } : {},
  );
  if (roots)
    client.setRequestHandler(ListRootsRequestSchema, () => ({
      roots: roots.map((root) => ({ uri: pathToFileURL(root).href })),
    }));
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [BIN, 'mcp'],
      // What an MCP client passes: HOME and PATH, no CA_SANDBOX_* variable; settings from the file.
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: home,
        XDG_CONFIG_HOME: join(home, 'config'),
        ...(process.env.DOCKER_HOST ? { DOCKER_HOST: process.env.DOCKER_HOST } : {}),
      },
      stderr: 'ignore',
    }),
  );
  return client;
}

beforeAll(() => {
  mkdirSync(ssh, { mode: 0o700 });
  for (const [name, content] of Object.entries(SSH_FILES))
    writeFileSync(join(ssh, name), content, { mode: 0o600 });
  mkdirSync(project);
  writeFileSync(join(project, 'README.md'), 'project\n');
  // Inside the allowed root, pointing out of it.
  symlinkSync(ssh, join(project, 'vendored-keys'));
  mkdirSync(outputRoot);
  symlinkSync(ssh, join(outputRoot, 'keys'));
  mkdirSync(join(home, 'config', 'ca-sandbox'), { recursive: true });
  writeFileSync(
    join(home, 'config', 'ca-sandbox', 'config.json'),
    JSON.stringify({
      baseImages: { plain: 'ca-sbx-base:debian', node: 'ca-sbx-base:node' },
      mcp: { outputRoot },
    }),
  );
});

afterAll(() => {
  rmSync(home, { recursive: true, force: true });
});

describe('MCP host paths: reads only under the roots', () => {
  let client: Client;
  beforeAll(async () => {
    client = await connect([project]);
  });
  afterAll(async () => {
    await client?.close();
  });

  it.each([
    ['a directory outside the roots (~/.ssh)', () => ssh],
    ['a symlink inside a root that points outside', () => join(project, 'vendored-keys')],
    ['a path that climbs out of a root', () => join(project, '..', '.ssh')],
  ])('create of %s is refused, naming the root, before anything exists', async (_, source) => {
    const name = `sbx-${randomUUID().slice(0, 8)}`;
    const result = await client.callTool({ name: 'sandbox_create', arguments: { source: source(), name } });
    expect(result.isError).toBe(true);
    expect(error(result)).toMatchObject({ code: 'HOST_PATH_REFUSED' });
    expect(error(result).message).toContain(`outside the allowed roots: ${project}`);
    expect(labeled(name)).toEqual([]);
    sshUntouched();
  });

  it('without any root (client sends none, none configured) every local source is refused', async () => {
    const bare = await connect(undefined);
    try {
      const name = `sbx-${randomUUID().slice(0, 8)}`;
      const result = await bare.callTool({ name: 'sandbox_create', arguments: { source: project, name } });
      expect(result.isError).toBe(true);
      expect(error(result).message).toMatch(
        /no allowed roots \(0 from the client's MCP roots, 0 from mcp\.roots/,
      );
      expect(labeled(name)).toEqual([]);
    } finally {
      await bare.close();
    }
  });
});

describe.each(RUNTIMES)('MCP host paths under %s: copies land only under the output root', (runtime) => {
  const id = `sbx-${randomUUID().slice(0, 8)}`;
  let client: Client;

  beforeAll(async () => {
    client = await connect([project]);
    const created = (await client.callTool({
      name: 'sandbox_create',
      arguments: { source: project, name: id, runtime },
    })) as ToolResult;
    expect(created.isError ?? false, JSON.stringify(created.content)).toBe(false);
    expect(created.structuredContent).toMatchObject({ id, runtime });
    // The box writes what an attacker would like to plant on the host.
    const planted = await client.callTool({
      name: 'sandbox_exec',
      arguments: {
        id,
        command: [
          'sh',
          '-c',
          'mkdir -p /work/repo/.ssh && echo "ssh-ed25519 EVIL attacker" > /work/repo/.ssh/authorized_keys && echo ok',
        ],
      },
    });
    expect((planted as ToolResult).structuredContent).toMatchObject({ exitCode: 0 });
  });

  afterAll(async () => {
    await client?.callTool({ name: 'sandbox_destroy', arguments: { ids: [id] } }).catch(() => undefined);
    await client?.close();
    await cli(['destroy', id]);
  });

  it.each([
    ['the host ~/.ssh by absolute path, with force', () => ssh, '/work/repo/.ssh'],
    ['a file in ~/.ssh, with force', () => join(ssh, 'authorized_keys'), '/work/repo/.ssh/authorized_keys'],
    ['a relative path that climbs out of the root', () => '../.ssh', '/work/repo/.ssh'],
    ['a symlink in the root that points to ~/.ssh', () => 'keys', '/work/repo/.ssh'],
    ['a path through that symlink', () => 'keys/authorized_keys', '/work/repo/.ssh/authorized_keys'],
  ])('cp_out to %s is refused, naming the output root', async (_, destination, path) => {
    const result = await client.callTool({
      name: 'sandbox_cp_out',
      arguments: { id, path, destination: destination(), force: true },
    });
    expect(result.isError).toBe(true);
    expect(error(result)).toMatchObject({ code: 'HOST_PATH_REFUSED' });
    expect(error(result).message).toContain(`outside the output root ${outputRoot}`);
    sshUntouched();
  });

  it('a copy under the output root still works', async () => {
    const result = (await client.callTool({
      name: 'sandbox_cp_out',
      arguments: { id, path: '/work/repo/.ssh/authorized_keys', destination: `copy-${runtime}.txt` },
    })) as ToolResult;
    expect(result.isError ?? false, JSON.stringify(result.content)).toBe(false);
    expect(readFileSync(join(outputRoot, `copy-${runtime}.txt`), 'utf8')).toBe('ssh-ed25519 EVIL attacker\n');
    sshUntouched();
  });
});
