import { randomBytes } from 'node:crypto';
import type { Registries } from '@ca-sandbox/build';
import { currentSettings, DEFAULT_HELPER_IMAGE, loadSettings } from '@ca-sandbox/config';
import { DEFAULT_DEPS_VIEW, DEPS_VIEWS, type DepsView, sanitizeName } from '@ca-sandbox/docker/contracts';
import {
  BUILDERS,
  type BuilderChoice,
  DOCKER_NAME_PATTERN,
  IMAGE_REF_PATTERN,
  parseSize,
  RUNTIMES,
  type Runtime,
  SIZE_SYNTAX,
} from '@ca-sandbox/docker/process';
import {
  allowlistEnforcement,
  CLAUDE_API_DESTINATION,
  checkCredentialTargets,
  type EgressRule,
  type InstallDestinations,
  InvalidCredentialError,
  type NetworkPolicy,
  parseAllowEntries,
  parseEgressRules,
  resolveNetworkPolicy,
} from '@ca-sandbox/network';
import { z } from 'zod';
import { type CredentialSpec, parseCredentialSpec } from './credentials.js';
import { InvalidOptionsError } from './errors.js';
import { BOX_LIMITS, checkLimits } from './limits.js';
import { DEFAULT_PACK_LIMITS, type PackLimits } from './pack-local.js';
import { parseRef, validateSandboxName } from './source.js';

export const CreateOptionsSchema = z.strictObject({
  source: z.string(),
  name: z.string().optional(),
  network: z.string().optional(),
  allow: z.array(z.string()).optional(),
  builder: z.enum(BUILDERS).optional(),
  ref: z.string().optional(),
  runtime: z.enum(RUNTIMES).optional(),
  // Bounds: checkLimits (limits.ts), so that every caller gets the same one-line message.
  memory: z.string().optional(),
  cpus: z.number().optional(),
  pids: z.number().optional(),
  baseImage: z.string().regex(IMAGE_REF_PATTERN, 'must be an image reference').optional(),
  /** How a node box sees its installed deps (default: setting deps.view, else links). */
  depsView: z.enum(DEPS_VIEWS).optional(),
  /** Cap on what the dependency install adds to the base image, like 4g (default env CA_SANDBOX_MAX_DEPS_SIZE, else 4g). */
  maxDepsSize: z.string().max(64).optional(),
  /**
   * A docker network for the clone helper to join directly, bypassing the egress gateway (tests
   * and special set-ups). Default: the clone goes through the sandbox's gateway, to the repo's
   * host only.
   */
  cloneNetwork: z.string().regex(DOCKER_NAME_PATTERN, 'must be a docker network name').optional(),
  /** Caps on the source: the local folder packed, and the checkout measured before it is written. */
  /** Bytes, or a docker size such as `512m` (the CLI passes the text of --max-source-bytes). */
  maxSourceBytes: z.union([z.number().int().min(1).max(Number.MAX_SAFE_INTEGER), z.string()]).optional(),
  maxSourceEntries: z.number().int().min(1).max(100_000_000).optional(),
  /**
   * Claude Code in the box's image, egress to the Anthropic API only (allowlist through the
   * gateway), gVisor when it can run that here. See resolveCreateOptions for what it refuses.
   */
  withClaude: z.boolean().optional(),
  /**
   * `<domain>=env:<VAR>|file:<path>[,header=<name>]` (credentials.ts): read on the host, added to
   * the box's HTTPS requests for that domain by its gateway; the box never holds the value.
   */
  credentials: z.array(z.string().max(4200)).max(32).optional(),
});

export type CreateOptions = z.input<typeof CreateOptionsSchema>;

export interface ResolvedCreateOptions {
  source: string;
  id: string;
  policy: NetworkPolicy;
  /** Normalised CIDRs, for an allowlist enforced by host firewall rules (addresses only). */
  allow: string[];
  /** Destinations for an allowlist enforced by the egress gateway (any domain among them). */
  allowRules: EgressRule[];
  /** The entries allowRules were parsed from, trimmed (the box's label; verify parses them again). */
  allowEntries: string[];
  allowVia: 'firewall' | 'gateway';
  builder: BuilderChoice;
  ref?: { ref: string; commit: boolean };
  runtime: Runtime;
  /** The caller named the runtime; else preflight may choose runsc (--with-claude, see chooseRuntime). */
  runtimeGiven: boolean;
  /** Claude Code in the image; the box's egress is CLAUDE_API_DESTINATION only. */
  withClaude: boolean;
  memory: string;
  cpus: number;
  pids: number;
  /** Whether the caller chose memory/cpus (a chosen value over the engine is refused, a default is lowered). */
  chosen: { memory: boolean; cpus: boolean };
  baseImage?: string;
  /** Bytes; undefined: the build package's default (env, else 4 GiB). */
  maxDepsSize?: number;
  cloneNetwork?: string;
  helperImage: string;
  /** What the install may reach besides its registries: the configured mirrors and install.allow. */
  installDestinations: InstallDestinations;
  /** The mirror settings by kind (the install's first registry: create/registry-trust.ts). */
  mirrors: Registries;
  /** Seconds the clone may take inside the helper. */
  cloneTimeoutSeconds: number;
  /** Caps on the local folder packed and on the checkout (entries, bytes of files). */
  sourceLimits: PackLimits;
  /** Credentials the box's gateway adds (their values are read at create, never kept). */
  credentials: CredentialSpec[];
  /** How a node box sees its installed deps (setting deps.view): links, or a repo view (repo-view.ts). */
  depsView: DepsView;
  /** Whether the user chose depsView (an option, the file or the environment): a box that cannot
   * have the view they asked for says so; the default falls back to links quietly (in the log). */
  depsViewChosen: boolean;
}

// The helper image is a setting (file, then env CA_SANDBOX_HELPER_IMAGE): @ca-sandbox/config.
export { DEFAULT_HELPER_IMAGE };

/**
 * Validates createSandbox options (InvalidOptionsError and friends, all usage errors) and fills
 * every default. Pure: nothing runs.
 */
export function resolveCreateOptions(
  input: unknown,
  env: NodeJS.ProcessEnv = process.env,
): ResolvedCreateOptions {
  const parsed = CreateOptionsSchema.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const detail =
      issue?.code === 'unrecognized_keys'
        ? `unknown option(s) ${issue.keys.join(', ')}`
        : `${issue?.path.join('.') || 'options'} ${issue?.message ?? 'is invalid'}`;
    throw new InvalidOptionsError(`invalid create options: ${detail}`);
  }
  const options = parsed.data;
  checkLimits(options);
  const { policy, entries } = withClaudeNetwork(options);
  if (entries.length > 0 && policy !== 'allowlist') {
    throw new InvalidOptionsError('--allow is only for the allowlist network policy');
  }
  if (policy === 'allowlist' && entries.length === 0) {
    throw new InvalidOptionsError(
      'the allowlist policy needs at least one --allow <domain|*.domain|ip|cidr>[:port]',
    );
  }
  // Addresses only: host firewall rules (any port and protocol; EXPERIMENTAL). Any domain or port:
  // the egress gateway, which resolves names itself and lets proxy-aware clients through.
  const allowVia = allowlistEnforcement(entries);
  const allow = allowVia === 'firewall' ? parseAllowEntries(entries) : [];
  const allowRules = allowVia === 'gateway' ? parseEgressRules(entries) : [];
  // runsc with an allowlist: decided in preflight, where the engine says how runsc is registered.
  const runtime = options.runtime ?? 'runc';
  const maxDepsSize = options.maxDepsSize === undefined ? undefined : parseSize(options.maxDepsSize.trim());
  if (options.maxDepsSize !== undefined && !(maxDepsSize !== undefined && maxDepsSize >= 1024 ** 2))
    throw new InvalidOptionsError(`invalid create options: maxDepsSize must be at least 1m, ${SIZE_SYNTAX}`);
  // The settings are resolved once here (file < env): the build reads the same ones for the install.
  const settings = env === process.env ? currentSettings() : loadSettings({ env });
  const helperImage = settings.value('helperImage') ?? DEFAULT_HELPER_IMAGE;
  const mirrors = {
    npm: settings.value('mirrors.npmRegistry'),
    pip: settings.value('mirrors.pypiIndex'),
    go: settings.value('mirrors.goProxy'),
  };
  const installDestinations = {
    mirrors: Object.values(mirrors).filter((value): value is string => value !== undefined),
    extra: settings.value('install.allow') ?? [],
  };
  // A bad extra destination is a usage error now, not a failed install later.
  parseEgressRules(installDestinations.extra);
  const credentials = resolveCredentials(
    withClaudeKey(options.credentials ?? [], options.withClaude === true, settings.value('claude.keySource')),
    policy,
    allowVia,
    allowRules,
  );
  return {
    source: options.source,
    id: options.name === undefined ? '' : validateSandboxName(options.name),
    policy,
    allow,
    allowRules,
    allowEntries: allowVia === 'gateway' ? entries.map((entry) => entry.trim()) : [],
    allowVia,
    builder: options.builder ?? 'auto',
    ...(options.ref === undefined ? {} : { ref: parseRef(options.ref) }),
    runtime,
    runtimeGiven: options.runtime !== undefined,
    withClaude: options.withClaude === true,
    memory: options.memory ?? BOX_LIMITS.memory.default,
    cpus: options.cpus ?? BOX_LIMITS.cpus.default,
    pids: options.pids ?? BOX_LIMITS.pids.default,
    chosen: { memory: options.memory !== undefined, cpus: options.cpus !== undefined },
    ...(options.baseImage === undefined ? {} : { baseImage: options.baseImage }),
    ...(maxDepsSize === undefined ? {} : { maxDepsSize }),
    ...(options.cloneNetwork === undefined ? {} : { cloneNetwork: options.cloneNetwork }),
    helperImage,
    installDestinations,
    mirrors: Object.fromEntries(Object.entries(mirrors).filter(([, value]) => value !== undefined)),
    cloneTimeoutSeconds: 600,
    sourceLimits: {
      maxBytes: sourceBytes(options.maxSourceBytes) ?? DEFAULT_PACK_LIMITS.maxBytes,
      maxEntries: options.maxSourceEntries ?? DEFAULT_PACK_LIMITS.maxEntries,
    },
    credentials,
    depsView: options.depsView ?? settings.value('deps.view') ?? DEFAULT_DEPS_VIEW,
    depsViewChosen: options.depsView !== undefined || settings.get('deps.view').source !== 'default',
  };
}

/**
 * A `--with-claude` box gets the Anthropic key from the gateway when the user configured where it
 * is (setting claude.keySource) and named no credential for that API themselves.
 */
function withClaudeKey(
  specs: readonly string[],
  withClaude: boolean,
  keySource: string | undefined,
): string[] {
  const named = specs.some((spec) => /^\s*api\.anthropic\.com\s*=/i.test(spec));
  return withClaude && keySource && !named ? [...specs, `api.anthropic.com=${keySource}`] : [...specs];
}

/**
 * Credentials are added by the box's egress gateway: only a box behind one (an allowlist that
 * names a domain), and only for a domain on that list.
 */
function resolveCredentials(
  specs: readonly string[],
  policy: NetworkPolicy,
  allowVia: 'firewall' | 'gateway',
  allowRules: readonly EgressRule[],
): CredentialSpec[] {
  if (specs.length === 0) return [];
  if (policy !== 'allowlist')
    throw new InvalidCredentialError(
      `--credential needs --network allowlist with its domain allowed: a box with --network ${policy} reaches no API, so it gets no credential`,
    );
  if (allowVia !== 'gateway')
    throw new InvalidCredentialError(
      '--credential needs its domain on the allowlist (--allow <domain>): an allowlist of addresses has no gateway to add it',
    );
  const parsed = specs.map((spec) => parseCredentialSpec(spec));
  checkCredentialTargets(parsed, allowRules);
  return parsed;
}

/**
 * The network of a create: `withClaude` means the allowlist policy with CLAUDE_API_DESTINATION as
 * its only entry. A policy other than allowlist, or any --allow beside it, is refused: a box that
 * will hold an API key reaches the API and nothing else.
 */
function withClaudeNetwork(options: {
  network?: string | undefined;
  allow?: string[] | undefined;
  withClaude?: boolean | undefined;
}): {
  policy: NetworkPolicy;
  entries: string[];
} {
  if (!options.withClaude)
    return { policy: resolveNetworkPolicy(options.network), entries: options.allow ?? [] };
  if (options.network !== undefined && options.network !== 'allowlist')
    throw new InvalidOptionsError(
      `--with-claude runs the box under the allowlist policy with ${CLAUDE_API_DESTINATION} only: it cannot be combined with --network ${sanitizeName(options.network, 40)}`,
    );
  if ((options.allow ?? []).length > 0)
    throw new InvalidOptionsError(
      `--with-claude allows ${CLAUDE_API_DESTINATION} and nothing else: --allow cannot widen the egress of a box that holds an API key`,
    );
  return { policy: 'allowlist', entries: [CLAUDE_API_DESTINATION] };
}

/** --max-source-bytes as bytes: a number as it is, a text through docker's size parser. */
function sourceBytes(value: number | string | undefined): number | undefined {
  if (typeof value !== 'string') return value;
  const bytes = parseSize(value.trim());
  if (bytes === undefined || bytes < 1 || !Number.isSafeInteger(bytes))
    throw new InvalidOptionsError(
      `invalid --max-source-bytes '${sanitizeName(value, 40)}': expected ${SIZE_SYNTAX}`,
    );
  return bytes;
}

/** A generated id: the repo name and a random suffix, within the id pattern. */
export function generateSandboxId(repoName: string): string {
  return validateSandboxName(`${repoName.slice(0, 40)}-${randomBytes(3).toString('hex')}`);
}
