// `POST /containers/create` of a dependency install (@ca-sandbox/build run-install.ts) and
// `POST /commit` of what it wrote. An install runs the repo's install scripts with network (the
// sandbox's egress gateway), so its body is a shape of its own beside the box's: what differs is
// a writable root (the install writes /deps: that layer becomes the deps image) and its PID 1,
// INSTALL_PID1, which holds the container for as long as its creator lives (the install itself is
// an exec in it). What it shares with the box: cap-drop ALL, no-new-privileges, an unprivileged
// user, the process limits, no mount, and no log file.

import { keysOutside, postCreate, type UlimitConfig } from './container-create.js';
import { engineHijack, engineJson, query, segment } from './engine-client.js';
import { InvariantError } from './error-base.js';
import { DockerResponseError } from './errors.js';
import { isProxyVariable } from './proxy.js';

/**
 * No log: the install's output comes over its exec's stream, and what any process writes to the
 * container's own stdout is kept nowhere on the host's disk.
 */
export const INSTALL_LOG_CONFIG = { Type: 'none', Config: {} } as const;

/**
 * The install container's PID 1: `cat` of the stdin its creator holds (holdInstallStdin), its
 * output discarded. Signals sent from inside a PID namespace never reach its init (it sets no
 * handler), so nothing of the repo's can end it or outlive it: the creator's end closes that stdin,
 * `cat` exits, and the kernel kills every other process of the container.
 */
export const INSTALL_PID1: readonly string[] = ['/bin/cat'];

export interface InstallHostConfig {
  CapDrop: ['ALL'];
  SecurityOpt: ['no-new-privileges'];
  ReadonlyRootfs: false;
  /** Bytes. */
  Memory: number;
  /** Bytes; equal to Memory (no swap on top). */
  MemorySwap: number;
  CpuPeriod: number;
  CpuQuota: number;
  /**
   * The container's own process cap (its cgroup's pids limit): the legacy builder had none, only
   * RLIMIT_NPROC, which counts the uid's processes across the host (Ulimits keeps it too).
   */
  PidsLimit: number;
  Ulimits: UlimitConfig[];
  Init: false;
  /** `none`, `bridge`, or the sandbox's internal egress network. */
  NetworkMode: string;
  LogConfig: typeof INSTALL_LOG_CONFIG;
}

/** The create body of an install container (the name goes in the query). */
export interface InstallContainerConfig {
  Image: string;
  /** Always empty: the image's ENTRYPOINT never runs (see SandboxContainerConfig). */
  Entrypoint: [];
  /** INSTALL_PID1: the install itself is an exec in the container. */
  Cmd: string[];
  User: string;
  /**
   * The deps image's variables (the recipe's, `$NAME` resolved against the image's own as a
   * Dockerfile ENV would): the commit keeps them as the image's. Never the install's proxies
   * (the script exports those), nothing of the host's.
   */
  Env?: string[];
  Labels: Record<string, string>;
  /**
   * Its creator holds the container's stdin (holdInstallStdin), which its PID 1 reads: when the
   * creating process dies, even by SIGKILL, the engine closes that stdin and the container ends.
   */
  OpenStdin: true;
  StdinOnce: true;
  HostConfig: InstallHostConfig;
}

const CONFIG_KEYS = new Set([
  'Image',
  'Entrypoint',
  'Cmd',
  'User',
  'Env',
  'Labels',
  'OpenStdin',
  'StdinOnce',
  'HostConfig',
]);
const HOST_CONFIG_KEYS = new Set([
  'CapDrop',
  'SecurityOpt',
  'ReadonlyRootfs',
  'Memory',
  'MemorySwap',
  'CpuPeriod',
  'CpuQuota',
  'PidsLimit',
  'Ulimits',
  'Init',
  'NetworkMode',
  'LogConfig',
]);

/**
 * The body as typed, checked again at run time (a cast could carry more): only the keys above,
 * cap-drop ALL, no-new-privileges, a user that is not root, limits, no mount (no Mounts or Binds
 * key), INSTALL_PID1 as its command on a held stdin. Throws InvariantError: a body failing here is
 * a bug of ours.
 */
export function assertInstallConfig(config: InstallContainerConfig): void {
  const extra = keysOutside(config, CONFIG_KEYS, HOST_CONFIG_KEYS);
  if (extra.length)
    throw new InvariantError(`install container: keys outside the install shape: ${extra.join(', ')}`);
  const host = config.HostConfig;
  if (host.CapDrop?.length !== 1 || host.CapDrop[0] !== 'ALL')
    throw new InvariantError('install container: CapDrop must be [ALL]');
  if (host.SecurityOpt?.length !== 1 || host.SecurityOpt[0] !== 'no-new-privileges')
    throw new InvariantError('install container: no-new-privileges is required');
  if (!/^[1-9][0-9]*:[1-9][0-9]*$/.test(config.User))
    throw new InvariantError('install container: the user must be a numeric uid:gid, not root');
  if (host.Memory <= 0 || host.MemorySwap !== host.Memory)
    throw new InvariantError('install container: a memory limit, and no swap on top of it');
  if (!(host.PidsLimit > 0)) throw new InvariantError('install container: a process limit');
  if (
    !Array.isArray(config.Entrypoint) ||
    config.Entrypoint.length !== 0 ||
    config.Cmd.length !== INSTALL_PID1.length ||
    config.Cmd.some((word, at) => word !== INSTALL_PID1[at])
  )
    throw new InvariantError('install container: no entrypoint, and INSTALL_PID1 as its command');
  if (config.OpenStdin !== true || config.StdinOnce !== true)
    throw new InvariantError('install container: its PID 1 reads the stdin its creator holds');
  // The commit keeps the container's Env as the image's: a proxy there would be every box's.
  const leaked = (config.Env ?? []).filter((entry) => isProxyVariable(entry.split('=', 1)[0] ?? ''));
  if (leaked.length)
    throw new InvariantError(
      'install container: no proxy variable in its Env (the install script exports them)',
    );
}

/** Creates the install container (not started); its id. */
export async function createInstallContainer(name: string, config: InstallContainerConfig): Promise<string> {
  assertInstallConfig(config);
  return postCreate(name, config);
}

/** An attach to an install container's stdin, held until released (or this process ends). */
export interface HeldStdin {
  /** Resolves once the engine ended the attach (the container exited, or it was cut). */
  ended: Promise<void>;
  /** Cuts the attach: the engine closes the container's stdin (StdinOnce), which ends its PID 1. */
  release(): void;
}

/**
 * Attaches to the container's stdin before its start and holds it, writing nothing. Its PID 1
 * (INSTALL_PID1) reads that stdin: the socket belongs to this process, so its end, even by
 * SIGKILL, ends the container and every process of the install in it, as the legacy builder
 * cancelled a build whose client went away.
 */
export async function holdInstallStdin(ref: string): Promise<HeldStdin> {
  const { socket } = await engineHijack(
    `/containers/${segment(ref)}/attach${query({ stream: 1, stdin: 1 })}`,
    {
      verb: 'attach',
    },
  );
  socket.on('error', () => {});
  const ended = new Promise<void>((resolve) => {
    socket.on('close', () => resolve());
    socket.on('end', () => resolve());
  });
  socket.resume();
  return { ended, release: () => socket.destroy() };
}

/** What a commit sets on the new image's config beside what the container had. */
export interface CommitChanges {
  /** Added to (and overriding) the container's labels. */
  labels: Record<string, string>;
  /**
   * The image's CMD: the engine would otherwise keep the container's command (the install step)
   * as the image's. Empty keeps it, so the caller passes its base's or a shell.
   */
  cmd: string[];
  /** The image's ENTRYPOINT (the container's is empty: the engine keeps that when this is empty). */
  entrypoint: string[];
  /**
   * The layer's comment in the image's history (its "created by" is the container's command,
   * INSTALL_PID1: the install's script, proxy and registry settings never reach the history).
   */
  comment?: string;
}

/** A commit of a big layer takes time (about 0.45 ms a file here: 20 s for 43,000 files). */
const COMMIT_TIMEOUT_MS = 30 * 60_000;

/**
 * `POST /commit` of a stopped container (no pause: nothing runs), untagged: the new image's id.
 * The engine builds the image's config from the container's (its Env, User, WorkingDir, labels)
 * with `changes` on top.
 */
export async function commitContainer(ref: string, changes: CommitChanges): Promise<string> {
  const body = {
    Labels: changes.labels,
    Cmd: changes.cmd,
    ...(changes.entrypoint.length ? { Entrypoint: changes.entrypoint } : {}),
  };
  const answer = (await engineJson(
    'POST',
    `/commit${query({ container: ref, pause: 0, comment: changes.comment })}`,
    {
      verb: 'commit',
      body,
      timeoutMs: COMMIT_TIMEOUT_MS,
    },
  )) as { Id?: unknown } | undefined;
  if (typeof answer?.Id !== 'string' || !/^sha256:[0-9a-f]{64}$/.test(answer.Id))
    throw new DockerResponseError('docker commit gave no image id');
  return answer.Id;
}

/** The name of an install container: one per build, found again by it. */
export function installContainerName(buildId: string): string {
  if (!/^[0-9a-f]{8,64}$/.test(buildId)) throw new InvariantError('invalid build id');
  return `ca-sbx_install-${buildId}`;
}
