import { randomUUID } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN, dockerReachable, LIFECYCLE_BUILT, LOCAL_IMAGES_ENV, runBin, sandboxWorkspace } from './_bin.js';

const READY = LIFECYCLE_BUILT && dockerReachable();

// A repo that pins its runtime (.nvmrc, go.mod's go line) and gets a box with another one fails in
// ways that look like its own bugs: create says so whatever the verbosity, in the CLI and to an
// MCP client, and prints nothing of the pin file but a bare version.
describe.skipIf(!READY)('create says when the box misses the runtime the repo pins (bin, MCP)', () => {
  const workspace = sandboxWorkspace('ca-sbx-pins-');
  const { work, folder } = workspace;

  afterAll(async () => {
    expect(await workspace.cleanup()).toEqual([]);
  });

  async function create(dir: string, extra: string[] = []) {
    const made = await workspace.create(dir, extra);
    expect(made.code, made.stderr).toBe(0);
    return made;
  }

  it('.nvmrc 18 on the node 22 box: one warning naming the file, both versions and the setting; --json too', async () => {
    const dir = folder('nvmrc-18', {
      '.nvmrc': 'v18.20.8\n',
      'package.json': JSON.stringify({ name: 'pinned', version: '1.0.0' }),
    });
    const text = await create(dir);
    const node = (await runBin(['exec', text.id, '--', 'node', '-p', 'process.versions.node'])).stdout.trim();
    expect(text.stderr).toContain(
      `warning: the repo asks for node 18.20.8 (.nvmrc); the box has node ${node}, so what it runs may behave differently (baseImages.node picks the box's image)`,
    );
    const json = await create(dir, ['--json']);
    expect(JSON.parse(json.stdout)).toMatchObject({ id: json.id });
    expect(json.stderr).toContain('warning: the repo asks for node 18.20.8 (.nvmrc)');
    // A pin the box meets says nothing.
    const met = await create(
      folder('nvmrc-met', { '.nvmrc': `${node.split('.')[0]}\n`, 'package.json': '{}' }),
    );
    expect(met.stderr).not.toContain('the repo asks for');
  }, 300_000);

  it('go.mod asking for a newer go: the warning, and go in the box does fail as it says', async () => {
    const dir = folder('go-new', {
      'go.mod': 'module example.com/pinned\n\ngo 1.99\n',
      'main.go': 'package main\n\nfunc main() {}\n',
    });
    const box = await create(dir);
    expect(box.stderr).toMatch(
      /warning: the repo needs go 1\.99 or newer \(go\.mod\); the box has go [0-9.]+, so go commands fail there/,
    );
    const build = await runBin(['exec', box.id, '--', 'go', 'build', './...']);
    expect(build.code).not.toBe(0);
    expect(build.stderr).toMatch(/go1\.99|go >= 1\.99/);
  }, 300_000);

  it('a pin file of escape sequences prints nothing of it and warns of nothing', async () => {
    const dir = folder('hostile-pin', {
      '.nvmrc': '\u001b]0;owned\u0007\u001b[2J 18\n',
      '.node-version': `${'1'.repeat(5000)}\n`,
      'package.json': JSON.stringify({ name: 'hostile', volta: { node: '\u001b[31m18' } }),
    });
    const box = await create(dir, ['--verbose']);
    expect(box.stderr).not.toContain('the repo asks for');
    expect(box.stderr).not.toContain('\u001b]0;');
    expect(box.stderr).not.toContain('owned');
  }, 300_000);

  it('an MCP client gets the warning as a note beside the record', async () => {
    const dir = folder('mcp-pin', { '.nvmrc': '16\n', 'package.json': JSON.stringify({ name: 'mcp-pin' }) });
    const id = `sbx-${randomUUID().slice(0, 8)}`;
    workspace.track(id);
    const client = new Client({ name: 'ca-sandbox-test', version: '0.0.0' }, { capabilities: { roots: {} } });
    client.setRequestHandler(ListRootsRequestSchema, () => ({
      roots: [{ uri: pathToFileURL(work).href, name: 'work' }],
    }));
    await client.connect(
      // The SDK passes a child only HOME, PATH and a few more unless told: the local base images
      // come from the environment (as runBin's), not from a configuration file setup.sh wrote.
      new StdioClientTransport({
        command: process.execPath,
        args: [BIN, 'mcp'],
        env: { ...(process.env as Record<string, string>), ...LOCAL_IMAGES_ENV },
        stderr: 'pipe',
      }),
    );
    try {
      const result = (await client.callTool({
        name: 'sandbox_create',
        arguments: { source: dir, name: id },
      })) as {
        content: { type: string; text: string }[];
        isError?: boolean;
      };
      expect(result.isError, result.content[0]?.text).toBeFalsy();
      expect(JSON.parse(result.content[0]?.text ?? '{}')).toMatchObject({ id });
      expect(result.content.slice(1).map((part) => part.text)).toContainEqual(
        expect.stringMatching(/^warning: the repo asks for node 16 \(\.nvmrc\); the box has node \d+/),
      );
    } finally {
      await client.close();
    }
  }, 300_000);
});
