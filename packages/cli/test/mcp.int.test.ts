import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BIN,
  dockerReachable,
  forceRemoveSandbox,
  LIFECYCLE_BUILT,
  LOCAL_IMAGES_ENV,
  remainingObjects,
} from './_bin.js';

const READY = LIFECYCLE_BUILT && dockerReachable();

type ToolResult = { content: { type: string; text: string }[]; isError?: boolean };

function payload(result: unknown): unknown {
  const first = (result as ToolResult).content[0];
  if (first?.type !== 'text') throw new Error('expected text content');
  return JSON.parse(first.text);
}

describe.skipIf(!READY)('ca-sandbox mcp driven by the SDK client', () => {
  const id = `sbx-${randomUUID().slice(0, 8)}`;
  const work = mkdtempSync(join(tmpdir(), 'ca-sbx-mcp-'));
  const client = new Client({ name: 'ca-sandbox-test', version: '0.0.0' });
  let stderr = '';

  beforeAll(async () => {
    writeFileSync(join(work, 'README.md'), 'mcp fixture\n');
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN, 'mcp'],
      env: { ...(process.env as Record<string, string>), ...LOCAL_IMAGES_ENV },
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
    rmSync(work, { recursive: true, force: true });
  });

  it('lists the seven tools, each with an input schema', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([
      'sandbox_cp_out',
      'sandbox_create',
      'sandbox_destroy',
      'sandbox_exec',
      'sandbox_list',
      'sandbox_prune',
      'sandbox_verify',
    ]);
    for (const tool of tools) expect(tool.inputSchema.type).toBe('object');
    const exec = tools.find((t) => t.name === 'sandbox_exec');
    expect(exec?.inputSchema.required).toEqual(expect.arrayContaining(['id', 'command']));
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
    const properties = (byName.get('sandbox_cp_out')?.inputSchema.properties ?? {}) as Record<
      string,
      { description?: string }
    >;
    const force = properties.force;
    expect(force?.description).toMatch(/replace an existing regular FILE/i);
    expect(force?.description).toMatch(/never deletes a directory/i);
    expect(properties.git?.description).toMatch(/sanitized/);
  });

  it('returns errors as isError results and keeps serving', async () => {
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

    const copyOpts = await client.callTool({ name: 'sandbox_create', arguments: { source: work, cpus: -1 } });
    expect(copyOpts.isError).toBe(true);

    expect(Array.isArray(payload(await client.callTool({ name: 'sandbox_list', arguments: {} })))).toBe(true);
  });

  it('create → exec → cp_out → verify → destroy, with the CLI contracts', async () => {
    const created = await client.callTool({ name: 'sandbox_create', arguments: { source: work, name: id } });
    expect(created.isError ?? false).toBe(false);
    expect(payload(created)).toMatchObject({ id, network: 'offline', status: 'running' });

    const listed = payload(await client.callTool({ name: 'sandbox_list', arguments: {} })) as {
      id: string;
    }[];
    expect(listed.map((r) => r.id)).toContain(id);

    const exec = await client.callTool({
      name: 'sandbox_exec',
      arguments: { id, command: ['sh', '-c', 'cat README.md; exit 3'] },
    });
    expect(exec.isError ?? false).toBe(false);
    expect(payload(exec)).toMatchObject({
      exitCode: 3,
      stdout: 'mcp fixture\n',
      timedOut: false,
      truncated: false,
    });

    const dest = join(work, 'out.md');
    const cp = await client.callTool({
      name: 'sandbox_cp_out',
      arguments: { id, path: '/work/repo/README.md', destination: dest },
    });
    expect(payload(cp)).toMatchObject({ files: 1 });
    expect(readFileSync(dest, 'utf8')).toBe('mcp fixture\n');

    // force into an existing directory: the entry lands inside it, nothing else is touched; a
    // directory in the way is an error, never deleted.
    const into = await client.callTool({
      name: 'sandbox_cp_out',
      arguments: { id, path: '/work/repo', destination: work, force: true },
    });
    expect(into.isError ?? false).toBe(false);
    expect(payload(into)).toMatchObject({ destination: join(work, 'repo') });
    expect(readFileSync(dest, 'utf8')).toBe('mcp fixture\n');
    expect(readFileSync(join(work, 'README.md'), 'utf8')).toBe('mcp fixture\n');
    const again = await client.callTool({
      name: 'sandbox_cp_out',
      arguments: { id, path: '/work/repo', destination: work, force: true },
    });
    expect(again.isError).toBe(true);
    expect(payload(again)).toMatchObject({ error: { code: 'CP_DESTINATION' } });
    expect(readFileSync(join(work, 'repo', 'README.md'), 'utf8')).toBe('mcp fixture\n');

    const verify = await client.callTool({ name: 'sandbox_verify', arguments: { id } });
    expect(verify.isError ?? false).toBe(false);
    expect(payload(verify)).toMatchObject({ ok: true });

    const destroyed = await client.callTool({ name: 'sandbox_destroy', arguments: { ids: [id] } });
    expect(destroyed.isError ?? false).toBe(false);
    expect(payload(destroyed)).toMatchObject({ failures: [], leftovers: [] });
    expect(remainingObjects(id)).toEqual([]);
  });

  it('prune --dry-run through MCP lists without removing', async () => {
    const pruned = await client.callTool({ name: 'sandbox_prune', arguments: { dryRun: true } });
    expect(payload(pruned)).toHaveProperty('removed');
    // Nothing but protocol on stdout: the client would have failed to parse anything else.
    expect(stderr).not.toMatch(/Error:/);
  });
});
