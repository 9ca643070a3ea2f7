// The rules every package shares, each defined once: sandbox ids and the names derived from them,
// the paths and the user of a box, the choices a user names, the error base and the sanitiser of
// shown text (their own files, re-exported here). No schemas and nothing that imports anything, so
// that every entry (the full barrel, the light `process` entry, the CLI's `contracts` entry for its
// start-up path) can carry it for free.

export * from './error-base.js';
export * from './sanitize.js';

import { CaSandboxError } from './error-base.js';
import { SHOWN_NAME_MAX, sanitizeName } from './sanitize.js';

/** The syntax of a sandbox id (the name a user gives a sandbox), as shown in error messages. */
export const SANDBOX_ID_SYNTAX = '[a-z0-9][a-z0-9_.-]{0,62}';
/**
 * A sandbox id: lower-case, no `/` and no leading `-` or `.`, at most 63 characters, so every name
 * derived from it (`ca-sbx-<id>`) is still a valid container, volume and network name.
 */
export const SANDBOX_ID_PATTERN = /^[a-z0-9][a-z0-9_.-]{0,62}$/;

export function isSandboxId(value: unknown): value is string {
  return typeof value === 'string' && SANDBOX_ID_PATTERN.test(value);
}

/**
 * A sandbox id (or name) outside SANDBOX_ID_PATTERN: the one error for it, whichever package or
 * caller saw it first (the CLI's argument, a create's name, a network name derived from it).
 */
export class InvalidSandboxIdError extends CaSandboxError {
  readonly code = 'INVALID_SANDBOX_ID';
  readonly kind = 'usage';
  constructor(id: unknown) {
    super(
      `invalid sandbox id '${sanitizeName(String(id), SHOWN_NAME_MAX)}': use 1-63 characters of a-z, 0-9, '_', '.', '-', starting with a letter or digit`,
      { hint: 'list sandboxes with `ca-sandbox ls`' },
    );
  }
}

/** Throws InvalidSandboxIdError unless `id` is a well-formed sandbox id. */
export function assertSandboxIdSyntax(id: unknown): string {
  if (!isSandboxId(id)) throw new InvalidSandboxIdError(id);
  return id;
}

/**
 * The names we give containers and volumes, and the label keys we set: docker's name syntax in
 * lower case, nothing that could read as a path or an option.
 */
export const OBJECT_NAME_PATTERN = /^[a-z0-9][a-z0-9_.-]{0,127}$/;
export const LABEL_KEY_PATTERN = OBJECT_NAME_PATTERN;
/** A name docker accepts for a network or a container reference (mixed case: not only ours). */
export const DOCKER_NAME_PATTERN = /^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,127}$/;
/** An image reference: no whitespace, no leading `-`, bounded. */
export const IMAGE_REF_PATTERN = /^[a-zA-Z0-9][a-zA-Z0-9_.\-/:@]{0,254}$/;
/** An environment variable name we pass into a container or a build. */
export const ENV_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

/** Box, volume and allowlist network names are this prefix and the sandbox id. */
export const SANDBOX_PREFIX = 'ca-sbx-';
/**
 * Helper names are this prefix and the id. `ca-sbx_` can never begin a box name (`ca-sbx-` and an
 * id), so no sandbox id names another sandbox's helper: `ca-sbx-<x>-helper` was the box of a
 * sandbox called `<x>-helper`.
 */
export const HELPER_PREFIX = 'ca-sbx_helper-';

/**
 * The volumes of a box's writable view of its image (IMAGE_VIEW_DIR): `ca-sbx_<part>-<id>`, never
 * a box or volume name (`ca-sbx-<id>`) or a helper's, as for HELPER_PREFIX.
 */
const VIEW_PREFIX = {
  view: 'ca-sbx_view-',
  upper: 'ca-sbx_upper-',
  work: 'ca-sbx_work-',
  repo: 'ca-sbx_repo-',
  repoWork: 'ca-sbx_rwork-',
} as const;
/** The container that holds a box's view volumes (inert-container.ts), never started. */
const HOLD_PREFIX = 'ca-sbx_hold-';

export interface SandboxNames {
  box: string;
  helper: string;
  volume: string;
  network: string;
  /** The overlay volume mounted at IMAGE_VIEW_DIR, and the two plain volumes it writes to. */
  imageView: { view: string; upper: string; work: string };
  /**
   * The overlay volume mounted at REPO_DIR in a box with a repo view (repo-view.ts), and its work
   * directory's plain volume; its upper is the sandbox's own volume.
   */
  repoView: { view: string; work: string };
  /** The never-started container that keeps the view volumes no container mounts in use. */
  hold: string;
}

/** The names of a sandbox's objects: the one home of the naming rule. */
export function sandboxNames(id: string): SandboxNames {
  const base = `${SANDBOX_PREFIX}${id}`;
  return {
    box: base,
    helper: `${HELPER_PREFIX}${id}`,
    volume: base,
    network: base,
    imageView: {
      view: `${VIEW_PREFIX.view}${id}`,
      upper: `${VIEW_PREFIX.upper}${id}`,
      work: `${VIEW_PREFIX.work}${id}`,
    },
    repoView: { view: `${VIEW_PREFIX.repo}${id}`, work: `${VIEW_PREFIX.repoWork}${id}` },
    hold: `${HOLD_PREFIX}${id}`,
  };
}

/**
 * The egress gateway's hostname, which its own /etc/hosts maps to itself: squid resolves a
 * clone's host there too, so it must be a name no repo host has (it was `gateway`:
 * `http://gateway:3128/x.git` reached squid itself, and a LAN host of that name was hidden).
 * `.invalid` is reserved (RFC 2606); a source naming it is refused like localhost.
 */
export const GATEWAY_HOSTNAME = 'ca-sandbox-gateway.invalid';

/** Where the source volume is mounted in a box or helper: the only mount of a named volume. */
export const REPO_DIR = '/work/repo';
/** Where a deps image keeps what the install wrote (outside the volume, read-only in the box). */
export const DEPS_DIR = '/deps';
/** The manifests' copy the install runs in. */
export const DEPS_SRC = `${DEPS_DIR}/src`;
/**
 * Where a box sees its whole image again, writable (an overlay whose lower layers are the image's
 * own and whose upper is a volume of the sandbox): the box's node_modules link into
 * `${IMAGE_VIEW_DIR}${DEPS_SRC}`, so a tool that writes into a dependency's folder writes a copy
 * of that file in the sandbox, while the deps stay in the image (see image-view.ts).
 */
export const IMAGE_VIEW_DIR = '/.ca-sbx-image';
/**
 * Where a box with a repo view (an overlay at REPO_DIR: the install's node_modules under the
 * checkout, see repo-view.ts) has the sandbox's own volume, read-only: what the clone wrote and the
 * box changed, without the installed deps (the report and cp read it). Its last part is `repo`, so
 * a copy of it is named as one of REPO_DIR.
 */
export const RAW_REPO_DIR = '/.ca-sbx-raw/repo';

/** The box user, never root: every box, helper, gateway and install step runs as it. */
export const BOX_UID = 1000;
export const BOX_GID = 1000;
export const BOX_USER = `${BOX_UID}:${BOX_GID}`;

/** The network policies of a sandbox: `offline` (default), `clone-then-cut`, `allowlist`. */
export const NETWORK_POLICIES = ['offline', 'clone-then-cut', 'allowlist'] as const;
export type NetworkPolicy = (typeof NETWORK_POLICIES)[number];
/** Container runtimes a box may run under (runsc = gVisor). */
export const RUNTIMES = ['runc', 'runsc'] as const;
export type Runtime = (typeof RUNTIMES)[number];
/** How the deps image is built. */
export const BUILDERS = ['auto', 'builtin', 'nixpacks'] as const;
export type BuilderChoice = (typeof BUILDERS)[number];
/**
 * How a node box sees its installed deps: `links` (node_modules entries link into the image) or
 * `overlay` (a repo view: the install under the checkout, repo-view.ts). Setting deps.view.
 */
export const DEPS_VIEWS = ['links', 'overlay'] as const;
export type DepsView = (typeof DEPS_VIEWS)[number];
/**
 * The repo view by default: node_modules are real folders of the project, as on a developer's
 * machine, so tools that refuse files outside the project (vite's server.fs.allow) work. Where the
 * engine cannot make one (gVisor, an image built before the view) a box links them instead.
 */
export const DEFAULT_DEPS_VIEW: DepsView = 'overlay';
/** Copy-out's treatment of git directories (withheld by default). */
export const GIT_MODES = ['withhold', 'sanitized'] as const;
export type GitMode = (typeof GIT_MODES)[number];

/** Whether POSIX `path` is `dir` or inside it (both normalized, absolute, no trailing slash). */
export const isUnderPath = (path: string, dir: string): boolean => path === dir || path.startsWith(`${dir}/`);

/** docker's own minimum for `--memory` (6 MiB: `Minimum memory limit allowed is 6MB`). */
export const DOCKER_MIN_MEMORY_BYTES = 6 * 1024 ** 2;
/** docker's smallest `--cpus` (`Range of CPUs is from 0.01 to N`). */
export const DOCKER_MIN_CPUS = 0.01;

/**
 * The one home of a box's resource limits: defaults and bounds. Sizes are docker's (parseSize),
 * minimums are docker's own, maximums of memory and cpus are the engine's (checked in create's
 * preflight). The CLI's help, the MCP tool's schema, runContainer and the lifecycle read them here.
 */
export const BOX_LIMITS = {
  memory: { default: '2g', minBytes: DOCKER_MIN_MEMORY_BYTES },
  cpus: { default: 2, min: DOCKER_MIN_CPUS },
  pids: { default: 512, min: 16, max: 1_000_000 },
} as const;

/** The default caps on a source: a local folder packed, and any checkout (`--max-source-*`). */
export const SOURCE_LIMITS = { maxBytes: 512 * 1024 ** 2, maxEntries: 200_000 } as const;

/**
 * Failed checks as every error says them (a box's gate, the install's confinement):
 * `id (expected …, saw …)`, `; `-joined.
 */
export function failedChecksText(rows: readonly { id: string; expected: string; seen: string }[]): string {
  return rows.map((row) => `${row.id} (expected ${row.expected}, saw ${row.seen})`).join('; ');
}
