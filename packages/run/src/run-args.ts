import {
  BOX_USER,
  DOCKER_CLI_PROXY_VARIABLES,
  LABEL_ALLOWED_ENV,
  LABEL_DNS,
  LABEL_EXTRA_NETWORKS,
  LABEL_NETWORK,
  LABEL_ROLE,
  LABEL_RUNTIME,
  labelArgs,
  parseSize,
  REPO_DIR,
  sandboxLabels,
} from '@ca-sandbox/docker';
import { buildMountArgs } from '@ca-sandbox/mounts';
import type { RunOptions } from './options.js';

export const KEEP_ALIVE = ['sleep', 'infinity'];
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
 * The complete `docker run` argv (without the leading `docker`) for a sandbox container.
 * Every hardening flag is fixed here; the options can only tighten limits or name things.
 */
export function buildRunArgs(options: RunOptions): string[] {
  const env = containerEnv(options);
  return [
    'run',
    '--detach',
    '--name',
    options.name,
    '--hostname',
    options.role === 'gateway' ? 'gateway' : 'sandbox',
    '--user',
    BOX_USER,
    '--cap-drop',
    'ALL',
    '--security-opt',
    'no-new-privileges',
    '--read-only',
    '--pids-limit',
    String(options.pidsLimit),
    '--memory',
    options.memory,
    '--memory-swap',
    options.memory,
    '--cpus',
    String(options.cpus),
    '--ipc',
    'private',
    '--ulimit',
    `fsize=${parseSize(options.maxFileSize)}`,
    '--init',
    '--runtime',
    options.runtime,
    '--network',
    options.network,
    ...(options.dns === 'blackhole' ? ['--dns', BLACKHOLE_DNS] : []),
    ...buildMountArgs([
      ...(options.volume === undefined
        ? []
        : [{ type: 'volume', source: options.volume, target: REPO_DIR, readonly: options.volumeReadOnly }]),
      { type: 'tmpfs', target: '/tmp', size: options.tmpfsSize, exec: true },
    ]),
    '--workdir',
    options.volume === undefined ? '/tmp' : REPO_DIR,
    ...Object.entries(env).flatMap(([key, value]) => ['--env', `${key}=${value}`]),
    ...labelArgs(containerLabels(options)),
    '--',
    options.image,
    ...(options.command ?? KEEP_ALIVE),
  ];
}
