import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BIN,
  dockerReachable,
  forceRemoveSandbox,
  freshShellEnv,
  LIFECYCLE_BUILT,
  remainingObjects,
} from './_bin.js';

const READY = LIFECYCLE_BUILT && dockerReachable();

type ToolResult = {
  content: { type: string; text: string }[];
  isError?: boolean;
  structuredContent?: Record<string, unknown>;
};

function payload(result: unknown): unknown {
  const first = (result as ToolResult).content[0];
  if (first?.type !== 'text') throw new Error('expected text content');
  return JSON.parse(first.text);
}

/**
 * The server as a client that passes no CA_SANDBOX_* variable starts it: every setting comes from
 * the configuration file at the XDG place (issue 13.2), and the client offers MCP roots (9.9).
 */
describe.skipIf(!READY)('ca-sandbox mcp driven by the SDK client', () => {
  const id = `sbx-${randomUUID().slice(0, 8)}`;
  const home = mkdtempSync(join(tmpdir(), 'ca-sbx-mcp-'));
  const work = join(home, 'project');
  const outputRoot = join(home, 'out');
  const client = new Client({ name: 'ca-sandbox-test', version: '0.0.0' }, { capabilities: { roots: {} } });
  let stderr = '';

  beforeAll(async () => {
    mkdirSync(work);
    writeFileSync(join(work, 'README.md'), 'mcp fixture\n');
    // A manifest no cached image has: the install really runs (and is slow enough to need progress).
    writeFileSync(
      join(work, 'package.json'),
      JSON.stringify({ name: `mcp-fixture-${id}`, version: '1.0.0', dependencies: { 'is-number': '7.0.0' } }),
    );
    mkdirSync(join(home, 'config', 'ca-sandbox'), { recursive: true });
    writeFileSync(
      join(home, 'config', 'ca-sandbox', 'config.json'),
      JSON.stringify({
        baseImages: { node: 'ca-sbx-base:node', plain: 'ca-sbx-base:debian' },
        ...(process.env.CA_SANDBOX_CA_CERTS ? { caCertificates: process.env.CA_SANDBOX_CA_CERTS } : {}),
        mcp: { outputRoot },
      }),
    );
    client.setRequestHandler(ListRootsRequestSchema, () => ({
      roots: [{ uri: pathToFileURL(work).href, name: 'project' }],
    }));
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN, 'mcp'],
      env: freshShellEnv({ HOME: home, XDG_CONFIG_HOME: join(home, 'config') }),
      stderr: 'pipe',
    });
    transport.stderr?.on('data', (chunk) => {
      stderr += chunk;
    });
    await client.connect(transport);
  });

  afterAll(async () => {
    await client.close();
    forceRemoveSandbox(id);
    rmSync(home, { recursive: true, force: true });
  });

  it('lists the eight tools, each with an input and an output schema', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([
      'sandbox_cp_out',
      'sandbox_create',
      'sandbox_destroy',
      'sandbox_exec',
      'sandbox_list',
      'sandbox_prune',
      'sandbox_report',
      'sandbox_verify',
    ]);
    for (const tool of tools) {
      expect(tool.inputSchema.type).toBe('object');
      expect(tool.outputSchema?.type).toBe('object');
    }
    const exec = tools.find((t) => t.name === 'sandbox_exec');
    expect(exec?.inputSchema.required).toEqual(expect.arrayContaining(['id', 'command']));
    expect(exec?.outputSchema?.required).toEqual(expect.arrayContaining(['exitCode', 'stdout', 'stderr']));
  });

  it('tells the client that what comes from a box is untrusted data', () => {
    const instructions = client.getInstructions() ?? '';
    expect(instructions).toMatch(/UNTRUSTED DATA/);
    expect(instructions).toMatch(/never instructions/i);
    expect(instructions).toMatch(/progress notifications/);
  });

  it('describes runtimes and policies as the CLI enforces them', async () => {
    const { tools } = await client.listTools();
    const properties = tools.find((t) => t.name === 'sandbox_create')?.inputSchema.properties as Record<
      string,
      { description?: string }
    >;
    expect(properties.runtime?.description).toMatch(/runsc .*offline or clone-then-cut, not allowlist/);
    expect(properties.network?.description).toMatch(/allowlist \(the box reaches only the allow list/);
    expect(properties.withClaude?.description).toMatch(/claude\.keySource setting/);
    expect(properties).not.toHaveProperty('credentials');
  });

  it('marks the tools that delete host or docker state as destructive', async () => {
    const { tools } = await client.listTools();
    const byName = new Map(tools.map((tool) => [tool.name, tool]));
    // cp_out with force replaces an existing host file (never a directory).
    for (const name of ['sandbox_cp_out', 'sandbox_destroy', 'sandbox_prune']) {
      expect(byName.get(name)?.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true });
    }
    for (const name of ['sandbox_list', 'sandbox_verify']) {
      expect(byName.get(name)?.annotations?.readOnlyHint).toBe(true);
    }
    expect(byName.get('sandbox_destroy')?.annotations?.idempotentHint).toBe(true);
    const properties = (byName.get('sandbox_cp_out')?.inputSchema.properties ?? {}) as Record<
      string,
      { description?: string }
    >;
    const force = properties.force;
    expect(force?.description).toMatch(/replace an existing regular FILE/i);
    expect(force?.description).toMatch(/never deletes a directory/i);
    expect(properties.git?.description).toMatch(/sanitized/);
  });

  it('returns errors as isError results in the tools’ words (no CLI flags) and keeps serving', async () => {
    const missing = await client.callTool({
      name: 'sandbox_exec',
      arguments: { id: `${id}-nope`, command: ['true'] },
    });
    expect(missing.isError).toBe(true);
    expect(payload(missing)).toMatchObject({ error: { code: 'SANDBOX_NOT_FOUND', kind: 'usage' } });

    const invalid = await client.callTool({ name: 'sandbox_exec', arguments: { id, command: [] } });
    expect(invalid.isError).toBe(true);

    const badId = await client.callTool({ name: 'sandbox_verify', arguments: { id: '../../etc' } });
    expect(badId.isError).toBe(true);
    expect(payload(badId)).toMatchObject({ error: { code: 'INVALID_SANDBOX_ID' } });

    for (const args of [
      { source: work, memory: 'lots' },
      { source: work, allow: ['10.0.0.1'] },
      { source: work, network: 'allowlist' },
    ]) {
      const refused = await client.callTool({ name: 'sandbox_create', arguments: args });
      expect(refused.isError).toBe(true);
      const text = (refused as ToolResult).content[0]?.text ?? '';
      expect(text).not.toMatch(/--[a-z]|see --help/);
      expect(text).toMatch(/`(memory|allow|network)`/);
    }

    // Claude Code only with a key the user configured (the agent names none), nothing made.
    const claude = await client.callTool({
      name: 'sandbox_create',
      arguments: { source: work, withClaude: true },
    });
    expect(claude.isError).toBe(true);
    expect(payload(claude)).toMatchObject({ error: { code: 'INVALID_OPTIONS', kind: 'usage' } });
    expect((claude as ToolResult).content[0]?.text ?? '').toMatch(/claude\.keySource setting/);

    expect(payload(await client.callTool({ name: 'sandbox_list', arguments: {} }))).toHaveProperty(
      'sandboxes',
    );
  });

  it('create sends progress (phases, install log lines, a heartbeat) often enough for a short timeout', async () => {
    const notes: { progress: number; message?: string; at: number }[] = [];
    const started = Date.now();
    const created = await client.callTool(
      { name: 'sandbox_create', arguments: { source: work, name: id, network: 'clone-then-cut' } },
      undefined,
      {
        // Far below the default 60 s: only progress keeps this call alive through the install.
        timeout: 8_000,
        resetTimeoutOnProgress: true,
        onprogress: (progress) => notes.push({ ...progress, at: Date.now() }),
      },
    );
    const finished = Date.now();
    expect(created.isError ?? false).toBe(false);
    expect((created as ToolResult).structuredContent).toMatchObject({
      id,
      network: 'clone-then-cut',
      status: 'running',
    });
    expect(payload(created)).toEqual((created as ToolResult).structuredContent);
    const messages = notes.map((n) => n.message ?? '');
    expect(messages).toEqual(
      expect.arrayContaining(
        ['clone', 'dephash', 'build', 'run', 'verify'].map((phase) =>
          expect.stringMatching(new RegExp(`^${phase} done`)),
        ),
      ),
    );
    // Log lines of the install itself, not only the phases.
    expect(messages.filter((m) => m.startsWith('build: ')).length).toBeGreaterThan(0);
    const progress = notes.map((n) => n.progress);
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
    expect(new Set(progress).size).toBe(progress.length);
    const gaps = [started, ...notes.map((n) => n.at), finished].map((at, i, all) =>
      i === 0 ? 0 : at - (all[i - 1] ?? at),
    );
    expect(Math.max(...gaps)).toBeLessThan(7_000);
  });

  it('exec → cp_out (under the output root) → verify, with structured content', async () => {
    const exec = await client.callTool({
      name: 'sandbox_exec',
      arguments: { id, command: ['sh', '-c', 'cat README.md; exit 3'] },
    });
    expect(exec.isError ?? false).toBe(false);
    expect((exec as ToolResult).structuredContent).toMatchObject({
      exitCode: 3,
      stdout: 'mcp fixture\n',
      timedOut: false,
      truncated: false,
    });

    // The default deps view: node_modules is a real folder of the project (a repo view), its
    // dependency resolves under /work/repo, and a write into it lands in the box only.
    const view = await client.callTool({
      name: 'sandbox_exec',
      arguments: {
        id,
        command: [
          'sh',
          '-c',
          'test -d node_modules -a ! -L node_modules && readlink -f node_modules/is-number/index.js && touch node_modules/is-number/probe && echo wrote',
        ],
      },
    });
    expect((view as ToolResult).structuredContent).toMatchObject({
      exitCode: 0,
      stdout: '/work/repo/node_modules/is-number/index.js\nwrote\n',
    });

    // A long output (a test run's) keeps its start and its end within the MCP cap (20 KiB per
    // stream), with a line where the rest was left out: an agent's client would cut 1 MiB itself.
    const long = await client.callTool({
      name: 'sandbox_exec',
      arguments: { id, command: ['sh', '-c', 'echo first; seq 1 100000; echo 1260 passing'] },
    });
    const longOut = (long as ToolResult).structuredContent as { stdout: string; truncated: boolean };
    expect(longOut.truncated).toBe(true);
    expect(longOut.stdout.startsWith('first\n1\n2\n')).toBe(true);
    expect(longOut.stdout.endsWith('99999\n100000\n1260 passing\n')).toBe(true);
    expect(longOut.stdout).toMatch(/\[\.\.\. \d+ bytes left out here by ca-sandbox/);
    expect(Buffer.byteLength(longOut.stdout)).toBeLessThanOrEqual(20 * 1024);
    const asked = await client.callTool({
      name: 'sandbox_exec',
      arguments: { id, command: ['sh', '-c', 'seq 1 100000'], maxBytes: 1024 * 1024 },
    });
    expect((asked as ToolResult).structuredContent).toMatchObject({ truncated: false });

    // A command the box does not have is an error result of its own, not the engine's text as stdout.
    const missing = await client.callTool({
      name: 'sandbox_exec',
      arguments: { id, command: ['no-such-tool'] },
    });
    expect(missing.isError).toBe(true);
    expect(payload(missing)).toMatchObject({
      error: { code: 'COMMAND_NOT_FOUND', message: 'command not found in the box: no-such-tool' },
    });

    const cp = await client.callTool({
      name: 'sandbox_cp_out',
      arguments: { id, path: '/work/repo/README.md', destination: 'out.md' },
    });
    expect(cp.isError ?? false).toBe(false);
    expect((cp as ToolResult).structuredContent).toMatchObject({
      files: 1,
      destination: join(outputRoot, 'out.md'),
    });
    expect(readFileSync(join(outputRoot, 'out.md'), 'utf8')).toBe('mcp fixture\n');
    const exists = await client.callTool({
      name: 'sandbox_cp_out',
      arguments: { id, path: '/work/repo/README.md', destination: 'out.md' },
    });
    expect(payload(exists)).toMatchObject({
      error: {
        code: 'CP_DESTINATION',
        message: `'${join(outputRoot, 'out.md')}' exists (set force: true to replace the file)`,
      },
    });

    const listed = (await client.callTool({ name: 'sandbox_list', arguments: {} })) as ToolResult;
    expect(((listed.structuredContent?.sandboxes ?? []) as { id: string }[]).map((r) => r.id)).toContain(id);

    // force into an existing directory (the output root itself): the entry lands inside it,
    // nothing else is touched; a directory in the way is an error, never deleted.
    const into = await client.callTool({
      name: 'sandbox_cp_out',
      arguments: { id, path: '/work/repo', destination: '.', force: true },
    });
    expect(into.isError ?? false).toBe(false);
    expect(payload(into)).toMatchObject({ destination: join(outputRoot, 'repo') });
    expect(readFileSync(join(outputRoot, 'out.md'), 'utf8')).toBe('mcp fixture\n');
    const again = await client.callTool({
      name: 'sandbox_cp_out',
      arguments: { id, path: '/work/repo', destination: outputRoot, force: true },
    });
    expect(again.isError).toBe(true);
    expect(payload(again)).toMatchObject({ error: { code: 'CP_DESTINATION' } });
    expect(readFileSync(join(outputRoot, 'repo', 'README.md'), 'utf8')).toBe('mcp fixture\n');

    // The copy of /work/repo is the checkout and the box's writes, never the installed deps.
    expect(existsSync(join(outputRoot, 'repo', 'node_modules', 'is-number', 'probe'))).toBe(true);
    expect(existsSync(join(outputRoot, 'repo', 'node_modules', 'is-number', 'index.js'))).toBe(false);

    const verify = await client.callTool({ name: 'sandbox_verify', arguments: { id } });
    expect(verify.isError ?? false).toBe(false);
    expect((verify as ToolResult).structuredContent).toMatchObject({ ok: true });
    const rows = ((verify as ToolResult).structuredContent?.checks ?? []) as {
      check: string;
      pass: boolean;
    }[];
    expect(rows).toContainEqual(expect.objectContaining({ check: 'repo-view', pass: true }));
  });

  it('destroy is idempotent: the second call succeeds and says the sandbox was already gone', async () => {
    const first = await client.callTool({ name: 'sandbox_destroy', arguments: { ids: [id] } });
    expect(first.isError ?? false).toBe(false);
    expect((first as ToolResult).structuredContent).toMatchObject({
      failures: [],
      leftovers: [],
      alreadyGone: [],
    });
    expect(remainingObjects(id)).toEqual([]);

    const second = await client.callTool({ name: 'sandbox_destroy', arguments: { ids: [id] } });
    expect(second.isError ?? false).toBe(false);
    expect((second as ToolResult).structuredContent).toMatchObject({ removed: [], alreadyGone: [id] });
    expect((second as ToolResult).content.map((c) => c.text)).toContain(`already gone: ${id}`);
  });

  it('prune dryRun through MCP lists without removing', async () => {
    const pruned = await client.callTool({ name: 'sandbox_prune', arguments: { dryRun: true } });
    expect((pruned as ToolResult).structuredContent).toHaveProperty('removed');
    // Nothing but protocol on stdout: the client would have failed to parse anything else.
    expect(stderr).not.toMatch(/Error:/);
  });
});
