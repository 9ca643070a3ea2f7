import { LABEL_NETWORK, LABEL_ROLE, LABEL_RUNTIME, labelArgs, sandboxLabels } from '@ca-sandbox/docker';
import { buildMountArgs } from '@ca-sandbox/mounts';
import { type RunOptions, sizeToBytes } from './options.js';

export const REPO_DIR = '/work/repo';
export const SANDBOX_USER = '1000:1000';
export const KEEP_ALIVE = ['sleep', 'infinity'];

/** The labels a container of these options carries; ours win over the caller's. */
export function containerLabels(options: RunOptions): Record<string, string> {
  return {
    ...options.labels,
    ...sandboxLabels(options.sandboxId, {
      [LABEL_ROLE]: options.role,
      [LABEL_RUNTIME]: options.runtime,
      [LABEL_NETWORK]: options.network,
    }),
  };
}

/**
 * The complete `docker run` argv (without the leading `docker`) for a sandbox container.
 * Every hardening flag is fixed here; the options can only tighten limits or name things.
 */
export function buildRunArgs(options: RunOptions): string[] {
  const env = { ...options.env, HOME: '/tmp' };
  return [
    'run',
    '--detach',
    '--name',
    options.name,
    '--hostname',
    'sandbox',
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
    `fsize=${sizeToBytes(options.maxFileSize)}`,
    '--init',
    '--runtime',
    options.runtime,
    '--network',
    options.network,
    ...buildMountArgs([
      { type: 'volume', source: options.volume, target: REPO_DIR, readonly: options.volumeReadOnly },
      { type: 'tmpfs', target: '/tmp', size: options.tmpfsSize, exec: true },
    ]),
    '--workdir',
    REPO_DIR,
    ...Object.entries(env).flatMap(([key, value]) => ['--env', `${key}=${value}`]),
    ...labelArgs(containerLabels(options)),
    '--',
    options.image,
    ...(options.command ?? KEEP_ALIVE),
  ];
}
