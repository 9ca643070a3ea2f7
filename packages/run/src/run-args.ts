import {
  DOCKER_CLI_PROXY_VARIABLES,
  LABEL_ALLOWED_ENV,
  LABEL_EXTRA_NETWORKS,
  LABEL_NETWORK,
  LABEL_ROLE,
  LABEL_RUNTIME,
  labelArgs,
  parseSize,
  sandboxLabels,
} from '@ca-sandbox/docker';
import { buildMountArgs } from '@ca-sandbox/mounts';
import type { RunOptions } from './options.js';

export const REPO_DIR = '/work/repo';
export const SANDBOX_USER = '1000:1000';
export const KEEP_ALIVE = ['sleep', 'infinity'];
/** TEST-NET-1 (RFC 5737): never routed, so a query sent there is dropped and nothing resolves. */
export const BLACKHOLE_DNS = '192.0.2.1';

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
    SANDBOX_USER,
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
