import {
  BOX_USER,
  DOCKER_CLI_PROXY_VARIABLES,
  GATEWAY_HOSTNAME,
  IMAGE_VIEW_DIR,
  LABEL_ALLOWED_ENV,
  LABEL_DNS,
  LABEL_EXTRA_NETWORKS,
  LABEL_NETWORK,
  LABEL_ROLE,
  LABEL_RUNTIME,
  labelArgs,
  parseSize,
  processUlimits,
  RAW_REPO_DIR,
  REPO_DIR,
  type SandboxContainerConfig,
  type SandboxHostConfig,
  SLEEP_BIN,
  sandboxLabels,
  ulimitFlags,
} from '@ca-sandbox/docker';
import { buildMountConfig, mountConfigArgs } from '@ca-sandbox/mounts';
import { InvalidRunOptionsError } from './errors.js';
import type { RunOptions } from './options.js';

/**
 * A box's main process (after docker-init): `sleep` of the image's system, by absolute path. By
 * name the engine looks it up on the image's PATH, which starts with /deps/pm/bin and
 * /deps/node_modules/.bin: a dependency's `sleep` bin would run as the box's main process the
 * moment it starts, before the isolation gate, the node_modules link and create's return (and,
 * with the box started beside the clone, while the helper writes the checkout).
 */
export const KEEP_ALIVE = [SLEEP_BIN, 'infinity'];
/**
 * The box's own loopback. On a user-defined network the box asks Docker's embedded resolver
 * (127.0.0.11), which forwards to the `--dns` servers; a loopback `--dns` is dialled inside the
 * container's network namespace (libnetwork: "--dns 127.0.0.x config refers to the loopback in
 * the container namespace"), where nothing of ours listens, so no query leaves the box and no name
 * resolves. A box process that listens there answers only itself. (A routable-looking address
 * such as TEST-NET-1 is not safe: 192.0.2.1 is a real gateway on some hosts.)
 */
export const BLACKHOLE_DNS = '127.0.0.1';

/** Blanked in every box unless the caller names them (see @ca-sandbox/docker). */
export const PROXY_ENV_NAMES: readonly string[] = DOCKER_CLI_PROXY_VARIABLES;

/**
 * The box's environment: the caller's names, HOME=/tmp, and every proxy variable the caller did
 * not name set empty — the CLI injects a proxy only when the name is absent from `--env`.
 */
export function containerEnv(options: RunOptions): Record<string, string> {
  const blanked = PROXY_ENV_NAMES.filter((name) => !Object.hasOwn(options.env, name));
  return { ...Object.fromEntries(blanked.map((name) => [name, ''])), ...options.env, HOME: '/tmp' };
}

/** The labels a container of these options carries; ours win over the caller's. */
export function containerLabels(options: RunOptions): Record<string, string> {
  return {
    ...options.labels,
    ...sandboxLabels(options.sandboxId, {
      [LABEL_ROLE]: options.role,
      [LABEL_RUNTIME]: options.runtime,
      [LABEL_NETWORK]: options.network,
      [LABEL_ALLOWED_ENV]: Object.keys(options.env).sort().join(','),
      [LABEL_DNS]: options.dns,
      ...(options.extraNetworks.length ? { [LABEL_EXTRA_NETWORKS]: options.extraNetworks.join(',') } : {}),
    }),
  };
}

/**
 * The create body of a sandbox container (`POST /containers/create`, what runContainer sends).
 * Every hardening field is fixed here; the options can only tighten limits or name things. The
 * `docker run` argv (buildRunArgs) is rendered from this same body, so the two cannot disagree.
 */
export function buildContainerConfig(options: RunOptions): SandboxContainerConfig {
  const mounts = buildMountConfig([
    // With a repo view the checkout is the view, and the volume itself is there read-only (which
    // also keeps the engine from removing it under a live view).
    ...(options.volume === undefined
      ? []
      : options.repoView !== undefined
        ? [
            // nocopy: else the engine mounts the view at create to see whether it is empty, and a
            // box started early is created while the clone still writes the view's upper.
            { type: 'volume', source: options.repoView, target: REPO_DIR, nocopy: true },
            { type: 'volume', source: options.volume, target: RAW_REPO_DIR, readonly: true },
          ]
        : [{ type: 'volume', source: options.volume, target: REPO_DIR, readonly: options.volumeReadOnly }]),
    ...(options.imageView === undefined
      ? []
      : [{ type: 'volume', source: options.imageView, target: IMAGE_VIEW_DIR }]),
    { type: 'tmpfs', target: '/tmp', size: options.tmpfsSize, exec: true },
  ]);
  const memory = bytes(options.memory);
  const maxFileSize = bytes(options.maxFileSize);
  return {
    Image: options.image,
    Entrypoint: [],
    Cmd: [...(options.command ?? KEEP_ALIVE)],
    User: BOX_USER,
    Hostname: options.role === 'gateway' ? GATEWAY_HOSTNAME : 'sandbox',
    WorkingDir: options.volume === undefined ? '/tmp' : REPO_DIR,
    Env: Object.entries(containerEnv(options)).map(([key, value]) => `${key}=${value}`),
    Labels: containerLabels(options),
    HostConfig: {
      CapDrop: ['ALL'],
      SecurityOpt: ['no-new-privileges'],
      ReadonlyRootfs: true,
      PidsLimit: options.pidsLimit,
      Memory: memory,
      MemorySwap: memory,
      // What docker's --cpus parser makes of the number (cpus × 10⁹ nano-CPUs).
      NanoCpus: Math.round(options.cpus * 1e9),
      IpcMode: 'private',
      ...(options.pidOf === undefined ? {} : { PidMode: `container:${options.pidOf}` as const }),
      // No core dumps, a file size cap: the same as the install's (@ca-sandbox/docker hardening).
      Ulimits: processUlimits({ fileSize: maxFileSize }),
      Init: true,
      Runtime: options.runtime,
      NetworkMode: options.network,
      Mounts: mounts.Mounts,
      Tmpfs: mounts.Tmpfs,
      ...(options.dns === 'blackhole' ? { Dns: [BLACKHOLE_DNS] } : {}),
      ...(keepsLog(options.role) ? {} : { LogConfig: { Type: 'none', Config: {} } }),
    },
  };
}

/**
 * Only the gateway keeps a log: it is its egress record. A box's or a helper's output to its
 * container stdout would otherwise land in a log file on the host's disk, unbounded (the box's
 * file-size limit does not apply to it): the log driver is `none`.
 */
export function keepsLog(role: RunOptions['role']): boolean {
  return role === 'gateway';
}

/** A size the options schema already checked (dockerSize). */
function bytes(size: string): number {
  const parsed = parseSize(size);
  if (parsed === undefined) throw new InvalidRunOptionsError(`'${size}' is not a size`);
  return parsed;
}

/** Each HostConfig field as the `docker run` flags that set it (every field has one: the type says so). */
const HOST_FLAGS: { [K in keyof SandboxHostConfig]-?: (value: SandboxHostConfig[K]) => string[] } = {
  CapDrop: (caps) => caps.flatMap((cap) => ['--cap-drop', cap]),
  SecurityOpt: (opts) => opts.flatMap((opt) => ['--security-opt', opt]),
  ReadonlyRootfs: (on) => (on ? ['--read-only'] : []),
  PidsLimit: (limit) => ['--pids-limit', String(limit)],
  Memory: (memory) => ['--memory', String(memory)],
  MemorySwap: (swap) => ['--memory-swap', String(swap)],
  NanoCpus: (nano) => ['--cpus', String(nano / 1e9)],
  IpcMode: (mode) => ['--ipc', mode],
  PidMode: (mode) => (mode ? ['--pid', mode] : []),
  Ulimits: (limits) => ulimitFlags(limits),
  Init: (on) => (on ? ['--init'] : []),
  Runtime: (runtime) => ['--runtime', runtime],
  NetworkMode: (network) => ['--network', network],
  Mounts: (mounts) => mountConfigArgs({ Mounts: mounts }),
  Tmpfs: (tmpfs) => mountConfigArgs({ Tmpfs: tmpfs }),
  Dns: (servers = []) => servers.flatMap((server) => ['--dns', server]),
  LogConfig: (log) => (log ? ['--log-driver', log.Type] : []),
};

/** Each Config field but the image and its command (the argv's tail) as its flags. */
const CONFIG_FLAGS: {
  [K in Exclude<keyof SandboxContainerConfig, 'Image' | 'Cmd' | 'HostConfig'>]-?: (
    value: SandboxContainerConfig[K],
  ) => string[];
} = {
  // `--entrypoint ''`: docker's way of saying "none, not the image's".
  Entrypoint: () => ['--entrypoint', ''],
  Hostname: (hostname) => ['--hostname', hostname],
  User: (user) => ['--user', user],
  WorkingDir: (dir) => ['--workdir', dir],
  Env: (env) => env.flatMap((entry) => ['--env', entry]),
  Labels: (labels) => labelArgs(labels),
};

function flagsOf<T, K extends keyof T>(value: T, flags: { [P in K]-?: (field: T[P]) => string[] }): string[] {
  return (Object.keys(flags) as K[]).flatMap((key) => flags[key](value[key]));
}

/**
 * The `docker run --detach` argv (without the leading `docker`) that says what a create body
 * says, for a raw comparison (the bench) and a check of the body against docker's own parser.
 */
export function runArgsOf(name: string, config: SandboxContainerConfig): string[] {
  return [
    'run',
    '--detach',
    '--name',
    name,
    ...flagsOf(config, CONFIG_FLAGS),
    ...flagsOf(config.HostConfig, HOST_FLAGS),
    '--',
    config.Image,
    ...config.Cmd,
  ];
}

/** The `docker run` argv of these options: buildContainerConfig rendered by runArgsOf. */
export function buildRunArgs(options: RunOptions): string[] {
  return runArgsOf(options.name, buildContainerConfig(options));
}
