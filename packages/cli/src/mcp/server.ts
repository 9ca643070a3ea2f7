import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { mergeTeardown } from '../commands/destroy.js';
import { verifyRows } from '../commands/verify.js';
import { BUILDERS, GIT_MODES, type GitMode, NETWORK_POLICIES, RUNTIMES } from '../constants.js';
import { describeError } from '../error-report.js';
import { UsageError } from '../errors.js';
import { allowlistWarning, loadLifecycle, type TeardownResult } from '../lifecycle-api.js';
import { assertSandboxId, resolveCreateOptions, resolveExecOptions } from '../options.js';
import { safeJsonStringify } from '../sanitize.js';

/** A tool result carrying JSON text (escaped like the CLI's --json output). */
export function jsonResult(
  value: unknown,
  options: { isError?: boolean; notes?: string[] } = {},
): CallToolResult {
  const content: CallToolResult['content'] = [{ type: 'text', text: safeJsonStringify(value, 2) }];
  for (const note of options.notes ?? []) content.push({ type: 'text', text: note });
  return options.isError ? { content, isError: true } : { content };
}

/** An error as a tool result (the server never crashes on a failed call). */
export function errorResult(error: unknown): CallToolResult {
  const report = describeError(error);
  const body: Record<string, string | string[]> = {
    code: report.code,
    kind: report.kind,
    message: report.message,
  };
  if (report.hint) body.hint = report.hint;
  if (report.details) body.details = report.details;
  if (report.logFile) body.logFile = report.logFile;
  return jsonResult({ error: body }, { isError: true });
}

function guarded<A>(handler: (args: A, extra: ToolExtra) => Promise<CallToolResult>) {
  return async (args: A, extra: ToolExtra): Promise<CallToolResult> => {
    try {
      return await handler(args, extra);
    } catch (error) {
      return errorResult(error);
    }
  };
}

interface ToolExtra {
  signal: AbortSignal;
  _meta?: { progressToken?: string | number };
  sendNotification: (notification: {
    method: 'notifications/progress';
    params: { progressToken: string | number; progress: number; total?: number; message?: string };
  }) => Promise<void>;
}

const id = z.string().describe('sandbox id (from sandbox_create or sandbox_list)');

const createShape = {
  source: z.string().min(1).describe('git URL or local directory of the repository to sandbox'),
  name: z.string().optional().describe('sandbox id to use (default: derived from the repo name)'),
  network: z
    .enum(NETWORK_POLICIES)
    .optional()
    .describe(
      'offline (default), clone-then-cut, or allowlist (the box reaches only the allow list, through the egress gateway)',
    ),
  allow: z
    .array(z.string())
    .optional()
    .describe(
      'with network allowlist: destinations the box may reach through the egress gateway: domains (*.example.com for subdomains), IPs or CIDRs, each with an optional :port (default 443 and 80); addresses only, without a port, use EXPERIMENTAL host firewall rules instead',
    ),
  builder: z.enum(BUILDERS).optional(),
  ref: z.string().optional().describe('branch, tag or commit'),
  runtime: z.enum(RUNTIMES).optional().describe('runsc (gVisor) for a kernel boundary; offline boxes only'),
  memory: z.string().optional().describe('memory limit such as 2g'),
  cpus: z.number().positive().optional(),
  pids: z.number().int().positive().optional(),
  baseImage: z.string().optional(),
};

const PHASES = ['preflight', 'clone', 'dephash', 'build', 'run', 'verify'];

/**
 * The MCP server: the CLI's operations as tools, same contracts (JSON text results; errors as
 * isError results). Nothing but protocol messages may reach stdout.
 */
export function createMcpServer(version: string): McpServer {
  const server = new McpServer({ name: 'ca-sandbox', version });

  server.registerTool(
    'sandbox_create',
    {
      title: 'Create a sandbox',
      description:
        'Clone an untrusted repository into a locked-down, throwaway Docker box (no host mounts, no network by default), build its dependencies image and verify isolation. Returns the sandbox record; use its id with the other tools.',
      inputSchema: createShape,
      annotations: { openWorldHint: true, destructiveHint: false },
    },
    guarded(async (args: z.infer<z.ZodObject<typeof createShape>>, extra: ToolExtra) => {
      const { source, cpus, pids, ...rest } = args;
      const request = resolveCreateOptions(source, {
        ...rest,
        ...(cpus === undefined ? {} : { cpus: String(cpus) }),
        ...(pids === undefined ? {} : { pids: String(pids) }),
      });
      const notes: string[] = [];
      const warning =
        request.network === 'allowlist' ? await allowlistWarning(request.allow ?? []) : undefined;
      if (warning) {
        notes.push(`warning: ${warning}`);
        process.stderr.write(`warning: ${warning}\n`);
      }
      const token = extra._meta?.progressToken;
      const lifecycle = await loadLifecycle();
      const record = await lifecycle.createSandbox(request, {
        signal: extra.signal,
        onPhase: (event) => {
          if (token === undefined || event.status !== 'done') return;
          extra
            .sendNotification({
              method: 'notifications/progress',
              params: {
                progressToken: token,
                progress: PHASES.indexOf(event.phase) + 1,
                total: PHASES.length,
                message: `${event.phase} done`,
              },
            })
            .catch(() => {});
        },
      });
      return jsonResult(record, { notes });
    }),
  );

  server.registerTool(
    'sandbox_exec',
    {
      title: 'Run a command in a sandbox',
      description:
        'Run argv (no shell unless you pass one, e.g. ["sh","-c","..."]) in the box at /work/repo. Returns {exitCode, stdout, stderr, truncated, timedOut, durationMs}; output is capped per stream.',
      inputSchema: {
        id,
        command: z.array(z.string()).min(1).describe('argv, e.g. ["ls","-la"]'),
        timeoutSeconds: z.number().positive().optional().describe('kill the command after this many seconds'),
        maxBytes: z
          .number()
          .int()
          .positive()
          .optional()
          .describe('cap on each of stdout and stderr (default 1 MiB)'),
      },
      annotations: { openWorldHint: false },
    },
    guarded(async (args: { id: string; command: string[]; timeoutSeconds?: number; maxBytes?: number }) => {
      const options = resolveExecOptions({
        ...(args.timeoutSeconds === undefined ? {} : { timeout: String(args.timeoutSeconds) }),
        ...(args.maxBytes === undefined ? {} : { maxBytes: String(args.maxBytes) }),
      });
      const lifecycle = await loadLifecycle();
      return jsonResult(await lifecycle.execInSandbox(assertSandboxId(args.id), args.command, options));
    }),
  );

  server.registerTool(
    'sandbox_cp_out',
    {
      title: 'Copy files out of a sandbox',
      description:
        'Copy a file or directory from the box to the host (the only direction files move). An existing destination directory receives the entry inside it (as cp and docker cp do); a directory is never deleted or replaced. Links leaving the tree, devices, unsafe names and git directories (.git, which git would execute from) are skipped and listed in `skipped`; files a host tool may run by itself (.envrc, .vscode tasks, .gitattributes drivers...) are listed in `warnings`. A symlink destination is refused.',
      inputSchema: {
        id,
        path: z.string().min(1).describe('path inside the box, absolute or relative to /work/repo'),
        destination: z
          .string()
          .min(1)
          .describe('host path to write to (absolute recommended); an existing directory receives the entry'),
        force: z
          .boolean()
          .optional()
          .describe(
            'Replace an existing regular FILE of the same name (atomically). Never deletes a directory: an existing directory in the way is an error. Default false: any existing target is refused.',
          ),
        git: z
          .enum(GIT_MODES)
          .optional()
          .describe(
            'withhold (default): git directories are left out. sanitized: a .git with history (objects, refs, HEAD, index) but a minimal config written by ca-sandbox, no hooks and no exec bits.',
          ),
      },
      annotations: {
        readOnlyHint: false,
        destructiveHint: true,
        idempotentHint: false,
        openWorldHint: false,
      },
    },
    guarded(
      async (args: { id: string; path: string; destination: string; force?: boolean; git?: GitMode }) => {
        const lifecycle = await loadLifecycle();
        return jsonResult(
          await lifecycle.cpOut(assertSandboxId(args.id), args.path, args.destination, {
            force: Boolean(args.force),
            git: args.git ?? 'withhold',
          }),
        );
      },
    ),
  );

  server.registerTool(
    'sandbox_list',
    {
      title: 'List sandboxes',
      description: 'The sandboxes on this Docker engine (read from labels only).',
      inputSchema: {},
      annotations: { readOnlyHint: true },
    },
    guarded(async () => jsonResult(await (await loadLifecycle()).listSandboxes())),
  );

  server.registerTool(
    'sandbox_destroy',
    {
      title: 'Destroy sandboxes',
      description:
        'Remove sandboxes (container, volume, network) and verify nothing is left. Returns {removed, failures, leftovers}; isError when anything is left.',
      inputSchema: {
        ids: z.array(id).optional().describe('sandbox ids'),
        all: z.boolean().optional().describe('every sandbox'),
        keepVolume: z.boolean().optional(),
      },
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    },
    guarded(async (args: { ids?: string[]; all?: boolean; keepVolume?: boolean }) => {
      const ids = args.ids ?? [];
      if (args.all && ids.length > 0) throw new UsageError('give ids or all, not both', 'INVALID_OPTIONS');
      if (!args.all && ids.length === 0)
        throw new UsageError('missing ids (or all: true)', 'INVALID_OPTIONS');
      for (const each of ids) assertSandboxId(each);
      const lifecycle = await loadLifecycle();
      const targets = args.all ? (await lifecycle.listSandboxes()).map((r) => r.id) : [...new Set(ids)];
      const results: TeardownResult[] = [];
      for (const target of targets)
        results.push(await lifecycle.destroySandbox(target, { keepVolume: Boolean(args.keepVolume) }));
      const merged = mergeTeardown(results);
      return jsonResult(merged, { isError: merged.failures.length > 0 || merged.leftovers.length > 0 });
    }),
  );

  server.registerTool(
    'sandbox_prune',
    {
      title: 'Prune everything ca-sandbox created',
      description:
        'Remove every object labeled ca.sandbox=1; images also removes the cached ca-sbx:* dependency images.',
      inputSchema: { dryRun: z.boolean().optional(), images: z.boolean().optional() },
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    },
    guarded(async (args: { dryRun?: boolean; images?: boolean }) => {
      const result = await (await loadLifecycle()).prune({
        dryRun: Boolean(args.dryRun),
        images: Boolean(args.images),
      });
      return jsonResult(result, { isError: result.failures.length > 0 || result.leftovers.length > 0 });
    }),
  );

  server.registerTool(
    'sandbox_verify',
    {
      title: 'Verify isolation',
      description:
        'Re-run the isolation gate on a running sandbox (docker inspect): one row per check with expected, seen, pass. isError when any check fails.',
      inputSchema: { id },
      annotations: { readOnlyHint: true },
    },
    guarded(async (args: { id: string }) => {
      const report = verifyRows(await (await loadLifecycle()).verifySandbox(assertSandboxId(args.id)));
      return jsonResult(report, { isError: !report.ok });
    }),
  );

  return server;
}

/** Serves MCP on stdin/stdout until stdin ends. */
export async function serveStdio(version: string): Promise<void> {
  const server = createMcpServer(version);
  const transport = new StdioServerTransport();
  await server.connect(transport);
  const closed = new Promise<void>((resolve) => {
    server.server.onclose = () => resolve();
  });
  process.stdin.once('end', () => {
    server.close().catch(() => {});
  });
  await closed;
}
