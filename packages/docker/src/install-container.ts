// `POST /containers/create` of a dependency install (@ca-sandbox/build run-install.ts) and
// `POST /commit` of what it wrote. An install runs the repo's install scripts with network (the
// sandbox's egress gateway), so its body is a shape of its own beside the box's: what differs is
// a writable root (the install writes /deps: that layer becomes the deps image) and no init (the
// install step's shell is PID 1, so `kill -KILL -1` in it reaches every process the install left).
// What it shares with the box: cap-drop ALL, no-new-privileges, an unprivileged user, the
// process limits, no mount at all, and a bounded log.

import { PassThrough, type Readable } from 'node:stream';
import type { UlimitConfig } from './container-create.js';
import { engineHijack, engineJson, query, segment } from './engine-client.js';
import { demultiplex } from './engine-exec.js';
import { InvariantError } from './error-base.js';
import { DockerResponseError } from './errors.js';

/**
 * No log: the install's output is read over its attach (attachInstall), and what its processes
 * write is kept nowhere on the host's disk.
 */
export const INSTALL_LOG_CONFIG = { Type: 'none', Config: {} } as const;

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
  /** The install step, named by an absolute path. */
  Cmd: string[];
  User: string;
  Labels: Record<string, string>;
  /**
   * The install holds its creator's attach on stdin (attachInstall): when the creating process
   * dies, even by SIGKILL, the engine closes the container's stdin and the step ends itself (its
   * stdin watch), as the legacy builder cancelled a build whose client went away.
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
 * cap-drop ALL, no-new-privileges, a user that is not root, no mount (no Mounts or Binds key),
 * the command by an absolute path. Throws InvariantError: a body failing here is a bug of ours.
 */
export function assertInstallConfig(config: InstallContainerConfig): void {
  const extra = [
    ...Object.keys(config).filter((key) => !CONFIG_KEYS.has(key)),
    ...Object.keys(config.HostConfig ?? {})
      .filter((key) => !HOST_CONFIG_KEYS.has(key))
      .map((key) => `HostConfig.${key}`),
  ];
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
  if (!Array.isArray(config.Entrypoint) || config.Entrypoint.length !== 0 || !config.Cmd[0]?.startsWith('/'))
    throw new InvariantError('install container: no entrypoint, and the command named by an absolute path');
}

/** Creates the install container (not started); its id. */
export async function createInstallContainer(name: string, config: InstallContainerConfig): Promise<string> {
  assertInstallConfig(config);
  const answer = (await engineJson('POST', `/containers/create${query({ name })}`, {
    verb: 'container create',
    body: config,
  })) as { Id?: unknown } | undefined;
  if (typeof answer?.Id !== 'string') throw new DockerResponseError('docker container create gave no id');
  return answer.Id;
}

/** The attach an install container runs under (attachInstall). */
export interface InstallAttach {
  /** The container's output, as it comes (the engine holds the container when it is not read). */
  stdout: Readable;
  stderr: Readable;
  /** Resolves once the engine ended the output (the container exited, or the attach was cut). */
  ended: Promise<void>;
  /** Cuts the attach: the engine closes the container's stdin (StdinOnce). */
  release(): void;
}

/**
 * Attaches to the container before its start: stdout and stderr come over it (no log file on the
 * host: LogConfig none), and its stdin is held, nothing written. The socket belongs to this
 * process: its end, even by SIGKILL, closes the container's stdin, which is the install's sign to
 * end (the step's stdin watch), as the legacy builder cancelled a build whose client went away.
 */
export async function attachInstall(ref: string): Promise<InstallAttach> {
  const { socket, head } = await engineHijack(
    `/containers/${segment(ref)}/attach${query({ stream: 1, stdin: 1, stdout: 1, stderr: 1 })}`,
    { verb: 'attach' },
  );
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  socket.on('error', () => {});
  const ended = demultiplex(socket, head, stdout, stderr)
    .then(
      () => undefined,
      () => undefined,
    )
    .finally(() => {
      stdout.end();
      stderr.end();
    });
  return { stdout, stderr, ended, release: () => socket.destroy() };
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
  const answer = (await engineJson('POST', `/commit${query({ container: ref, pause: 0 })}`, {
    verb: 'commit',
    body,
    timeoutMs: COMMIT_TIMEOUT_MS,
  })) as { Id?: unknown } | undefined;
  if (typeof answer?.Id !== 'string' || !/^sha256:[0-9a-f]{64}$/.test(answer.Id))
    throw new DockerResponseError('docker commit gave no image id');
  return answer.Id;
}

/** The name of an install container: one per build, found again by it. */
export function installContainerName(buildId: string): string {
  if (!/^[0-9a-f]{8,64}$/.test(buildId)) throw new InvariantError('invalid build id');
  return `ca-sbx_install-${buildId}`;
}
