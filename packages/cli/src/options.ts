import {
  BUILDERS,
  DEPS_VIEWS,
  type DepsView,
  NETWORK_POLICIES,
  RUNTIMES,
  SANDBOX_ID_PATTERN,
} from '@ca-sandbox/docker/contracts';
import { z } from 'zod';
import { zodSentence } from './error-report.js';
import { UsageError } from './errors.js';

// Only the shape of each number here: the bounds (docker's minimums, the engine's cores and
// memory, the pids range) live in @ca-sandbox/lifecycle BOX_LIMITS, whose LimitError names the flag.
const decimal = (what: string) =>
  z
    .string()
    .trim()
    .regex(/^\d+(\.\d+)?$/, `expected ${what}`)
    .transform(Number);

const wholeNumber = (what: string) => z.string().trim().regex(/^\d+$/, `expected ${what}`).transform(Number);

/** What commander hands to create/run (all strings, repeatable --allow as an array). */
const CreateFlagsSchema = z.object({
  name: z
    .string()
    .regex(
      SANDBOX_ID_PATTERN,
      'expected lower-case letters, digits, ".", "_" or "-" (at most 63, starting with a letter or digit)',
    )
    .optional(),
  network: z
    .enum(NETWORK_POLICIES, { error: `expected one of ${NETWORK_POLICIES.join(', ')}` })
    .default('offline'),
  allow: z.array(z.string().trim().min(1, 'expected a domain, ip or cidr')).default([]),
  builder: z.enum(BUILDERS, { error: `expected one of ${BUILDERS.join(', ')}` }).optional(),
  ref: z
    .string()
    .regex(/^[^\s-][^\s]*$/, 'expected a branch, tag or commit (no spaces, not starting with "-")')
    .optional(),
  runtime: z.enum(RUNTIMES, { error: `expected one of ${RUNTIMES.join(', ')}` }).optional(),
  memory: z.string().trim().min(1, 'expected a size such as 512m or 2g').optional(),
  cpus: decimal('a number of cpus such as 1 or 0.5').optional(),
  pids: wholeNumber('a whole number of processes such as 512').optional(),
  baseImage: z
    .string()
    .regex(/^[a-zA-Z0-9][a-zA-Z0-9._/:@-]*$/, 'expected an image reference such as debian:bookworm')
    .optional(),
  depsView: z.enum(DEPS_VIEWS, { error: `expected one of ${DEPS_VIEWS.join(', ')}` }).optional(),
  // A size in docker's syntax, parsed (and bounded) by the lifecycle like --memory.
  maxSourceBytes: z.string().trim().min(1, 'expected a size such as 512m or 2g').optional(),
  maxSourceEntries: wholeNumber('a whole number of entries such as 200000')
    .refine((n) => n >= 1 && n <= 100_000_000, 'expected from 1 to 100000000 entries')
    .optional(),
  // Checked (with docker's size syntax and the 1m floor) by the lifecycle, like --memory.
  maxDepsSize: z.string().trim().min(1, 'expected a size such as 4g or 512m').optional(),
  withClaude: z.boolean().optional(),
  // Parsed (domain, source, header) and checked against the allowlist by the lifecycle.
  credential: z.array(z.string().trim().min(1, 'expected <domain>=env:<VAR>|file:<path>')).default([]),
});

export type CreateFlags = z.input<typeof CreateFlagsSchema>;

/** createSandbox options as @ca-sandbox/lifecycle takes them. */
export interface CreateRequest {
  source: string;
  name?: string;
  /** Absent only with withClaude and no --network (the lifecycle then applies allowlist). */
  network?: (typeof NETWORK_POLICIES)[number];
  allow?: string[];
  builder?: (typeof BUILDERS)[number];
  ref?: string;
  runtime?: (typeof RUNTIMES)[number];
  memory?: string;
  cpus?: number;
  pids?: number;
  baseImage?: string;
  depsView?: DepsView;
  maxSourceBytes?: string;
  maxSourceEntries?: number;
  maxDepsSize?: string;
  withClaude?: boolean;
  credentials?: string[];
}

function parseOrUsage<T extends z.ZodType>(schema: T, input: unknown): z.output<T> {
  const parsed = schema.safeParse(input);
  if (!parsed.success) throw new UsageError(zodSentence(parsed.error.issues), 'INVALID_OPTIONS');
  return parsed.data;
}

/**
 * Normalises create/run flags into createSandbox options. Only the flags the user gave are
 * passed on, so the lifecycle's own defaults stay the single source of truth.
 */
export function resolveCreateOptions(source: string, flags: CreateFlags): CreateRequest {
  if (!source.trim()) throw new UsageError('missing <repo-url-or-path>', 'INVALID_OPTIONS');
  const parsed = parseOrUsage(CreateFlagsSchema, flags);
  if (parsed.withClaude) {
    // The lifecycle applies --with-claude's network (and refuses what conflicts with it): only
    // what the user typed goes along.
    const request: CreateRequest = { source, withClaude: true };
    if (flags.network !== undefined) request.network = parsed.network;
    if (parsed.allow.length > 0) request.allow = parsed.allow;
    return passFlags(request, parsed);
  }
  if (parsed.allow.length > 0 && parsed.network !== 'allowlist') {
    throw new UsageError('--allow only applies to --network allowlist', 'INVALID_OPTIONS');
  }
  if (parsed.network === 'allowlist' && parsed.allow.length === 0) {
    throw new UsageError(
      '--network allowlist needs at least one --allow <domain|ip|cidr>[:port]',
      'INVALID_OPTIONS',
    );
  }
  const request: CreateRequest = { source, network: parsed.network };
  if (parsed.allow.length > 0) request.allow = parsed.allow;
  return passFlags(request, parsed);
}

/** The flags the lifecycle takes as they are, when the user gave them. */
function passFlags(request: CreateRequest, parsed: z.output<typeof CreateFlagsSchema>): CreateRequest {
  const passed = [
    'name',
    'builder',
    'ref',
    'runtime',
    'memory',
    'cpus',
    'pids',
    'baseImage',
    'depsView',
    'maxSourceBytes',
    'maxSourceEntries',
    'maxDepsSize',
  ] as const;
  for (const key of passed) {
    if (parsed[key] !== undefined) Object.assign(request, { [key]: parsed[key] });
  }
  if (parsed.credential.length > 0) request.credentials = parsed.credential;
  return request;
}

export { assertSandboxId, resolveExecOptions } from './exec-options.js';

/**
 * Parses `cp` operands. Only `<id>:<path> <host-dest>` is accepted: files leave a box only by a
 * copy the host starts; `<host> <id>:<path>` (copy in) is refused.
 */
export function parseCpOperands(
  source: string,
  destination: string,
): { id: string; boxPath: string; hostDest: string } {
  const from = splitBoxPath(source);
  if (!from) {
    if (splitBoxPath(destination)) {
      throw new UsageError(
        'copying into a sandbox is refused: egress is out-only (files leave a box through `ca-sandbox cp <id>:<path> <dest>`, nothing is copied in)',
        'COPY_IN_REFUSED',
      );
    }
    throw new UsageError(`expected <id>:<path> as the source, got "${source}"`, 'INVALID_OPTIONS');
  }
  if (!destination.trim()) throw new UsageError('missing <host-dest>', 'INVALID_OPTIONS');
  return { id: from.id, boxPath: from.path, hostDest: destination };
}

function splitBoxPath(operand: string): { id: string; path: string } | undefined {
  const colon = operand.indexOf(':');
  if (colon <= 0) return undefined;
  const id = operand.slice(0, colon);
  const path = operand.slice(colon + 1);
  if (!SANDBOX_ID_PATTERN.test(id) || path === '') return undefined;
  return { id, path };
}
