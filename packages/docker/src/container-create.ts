// `POST /containers/create` + `POST /containers/{id}/start`: how a sandbox container starts. The
// body type names only what a sandbox container may set, with the hardening as literal types
// (CapDrop ['ALL'], ReadonlyRootfs true, volume mounts only): Privileged, Binds, Devices,
// PortBindings, CapAdd and the rest have no field here, and a body carrying any key outside this
// shape is refused before it reaches the engine. @ca-sandbox/run builds the body; its gate reads
// the started container back.

import { engineCall, engineJson, query, segment } from './engine-client.js';
import { InvariantError } from './error-base.js';
import { DockerEngineError, DockerResponseError } from './errors.js';

/** A named volume at a target (the only mount a sandbox container has; @ca-sandbox/mounts makes it). */
export interface VolumeMountConfig {
  Type: 'volume';
  Source: string;
  Target: string;
  ReadOnly: boolean;
  /**
   * A read-only mount takes nothing from the image: the engine would otherwise copy the image's
   * folder at the target (its contents, its owner and mode) into a volume it finds empty, even one
   * mounted read-only (a lister's mount of a box's view upper: red team).
   */
  VolumeOptions?: { NoCopy: true; DriverConfig: Record<string, never> };
}

export interface UlimitConfig {
  Name: string;
  Soft: number;
  Hard: number;
}

/** The HostConfig of a sandbox container. */
export interface SandboxHostConfig {
  CapDrop: ['ALL'];
  SecurityOpt: string[];
  ReadonlyRootfs: true;
  PidsLimit: number;
  /** Bytes. */
  Memory: number;
  /** Bytes; equal to Memory (no swap on top). */
  MemorySwap: number;
  NanoCpus: number;
  IpcMode: 'private';
  /**
   * Private (absent) but for the report's lister, which joins its own sandbox's frozen box
   * (`container:<box>`) to list the box's tmpfs through /proc/1/root (run's pidOf).
   */
  PidMode?: `container:${string}`;
  Ulimits: UlimitConfig[];
  Init: true;
  Runtime: string;
  NetworkMode: string;
  Mounts: VolumeMountConfig[];
  /** Target → mount options (`exec,nosuid,nodev,size=…`). */
  Tmpfs: Record<string, string>;
  /** Resolver addresses, only when the policy sets them. */
  Dns?: string[];
  /**
   * `none` for a box and a helper: what their processes write to the container's stdout (any
   * process may write to /proc/1/fd/1) is kept nowhere, not in a log file on the host's disk that
   * no limit bounds. Absent for the gateway, whose log is its egress record.
   */
  LogConfig?: { Type: 'none'; Config: Record<string, never> };
}

/** The create body of a sandbox container (the container name goes in the query). */
export interface SandboxContainerConfig {
  Image: string;
  /**
   * Always empty: the image's ENTRYPOINT never runs. Official images name theirs by a bare name
   * (`docker-entrypoint.sh`), looked up on the image's PATH, where a deps image puts the
   * dependencies' bins first: a dependency could plant one that runs at every start.
   */
  Entrypoint: [];
  /** Our main process, named by an absolute path (never looked up on the image's PATH). */
  Cmd: string[];
  User: string;
  Hostname: string;
  WorkingDir: string;
  /** `NAME=value` entries. */
  Env: string[];
  Labels: Record<string, string>;
  HostConfig: SandboxHostConfig;
}

const CONFIG_KEYS = new Set([
  'Image',
  'Entrypoint',
  'Cmd',
  'User',
  'Hostname',
  'WorkingDir',
  'Env',
  'Labels',
  'HostConfig',
]);
const HOST_CONFIG_KEYS = new Set([
  'CapDrop',
  'SecurityOpt',
  'ReadonlyRootfs',
  'PidsLimit',
  'Memory',
  'MemorySwap',
  'NanoCpus',
  'IpcMode',
  'PidMode',
  'Ulimits',
  'Init',
  'Runtime',
  'NetworkMode',
  'Mounts',
  'Tmpfs',
  'Dns',
  'LogConfig',
]);

/**
 * NoCopy and an empty DriverConfig, as the docker CLI writes `volume-nocopy` (the create body and
 * its argv must be recorded the same): no driver, no driver option, nothing else.
 */
function noCopyOnly(options: object): boolean {
  const { NoCopy, DriverConfig, ...rest } = options as { NoCopy?: unknown; DriverConfig?: unknown };
  return (
    NoCopy === true &&
    typeof DriverConfig === 'object' &&
    DriverConfig !== null &&
    Object.keys(DriverConfig).length === 0 &&
    Object.keys(rest).length === 0
  );
}

/**
 * The keys of a create body outside its shape (`HostConfig.<key>` for the host part): a cast or a
 * plain object could carry more than its type names. One check for both shapes we create.
 */
export function keysOutside(
  config: { HostConfig?: object },
  configKeys: ReadonlySet<string>,
  hostConfigKeys: ReadonlySet<string>,
): string[] {
  return [
    ...Object.keys(config).filter((key) => !configKeys.has(key)),
    ...Object.keys(config.HostConfig ?? {})
      .filter((key) => !hostConfigKeys.has(key))
      .map((key) => `HostConfig.${key}`),
  ];
}

/**
 * The body as typed, checked again at run time (a cast or a plain object could carry more): only
 * the keys above, cap-drop ALL, a read-only root and volume mounts. Throws a plain Error: a body
 * that fails here is a bug of ours, not the engine's refusal.
 */
export function assertSandboxConfig(config: SandboxContainerConfig): void {
  const extra = keysOutside(config, CONFIG_KEYS, HOST_CONFIG_KEYS);
  if (extra.length)
    throw new InvariantError(`container create: keys outside the sandbox shape: ${extra.join(', ')}`);
  const host = config.HostConfig;
  if (host.CapDrop?.length !== 1 || host.CapDrop[0] !== 'ALL' || host.ReadonlyRootfs !== true)
    throw new InvariantError('container create: CapDrop must be [ALL] and the root read-only');
  // Another container's PID namespace (the report's lister joins its own box's), never the host's.
  if (host.PidMode !== undefined && !/^container:[a-zA-Z0-9][a-zA-Z0-9_.-]{0,200}$/.test(host.PidMode))
    throw new InvariantError("container create: PidMode may only name a container's namespace");
  const MOUNT_KEYS = ['Type', 'Source', 'Target', 'ReadOnly', 'VolumeOptions'];
  const plainVolume = (mount: VolumeMountConfig) =>
    mount.Type === 'volume' &&
    ['Type', 'Source', 'Target', 'ReadOnly'].every((key) => key in mount) &&
    Object.keys(mount).every((key) => MOUNT_KEYS.includes(key)) &&
    (mount.VolumeOptions === undefined || noCopyOnly(mount.VolumeOptions));
  if (!host.Mounts.every(plainVolume))
    throw new InvariantError('container create: only volume mounts are allowed');
  if (!Array.isArray(config.Entrypoint) || config.Entrypoint.length !== 0 || !config.Cmd[0]?.startsWith('/'))
    throw new InvariantError('container create: no entrypoint, and the command named by an absolute path');
}

/** Creates the container (not started); its id. A name in use is a DockerEngineError with status 409. */
export async function createContainer(name: string, config: SandboxContainerConfig): Promise<string> {
  assertSandboxConfig(config);
  return postCreate(name, config);
}

/**
 * `POST /containers/create` of a body its caller checked (assertSandboxConfig, assertInstallConfig:
 * the only two shapes we create); the new container's id.
 */
export async function postCreate(name: string, body: object): Promise<string> {
  const answer = (await engineJson('POST', `/containers/create${query({ name })}`, {
    verb: 'container create',
    body,
  })) as { Id?: unknown } | undefined;
  if (typeof answer?.Id !== 'string') throw new DockerResponseError('docker container create gave no id');
  return answer.Id;
}

/** A start of a gVisor container on a loaded host can take a while: more than the default minute. */
const START_TIMEOUT_MS = 180_000;

/**
 * Creates and starts (what `docker run --detach` does); the new container's id. When the start
 * fails the created container is removed before the error is thrown: nothing is left behind.
 */
export async function runContainerConfig(name: string, config: SandboxContainerConfig): Promise<string> {
  const id = await createContainer(name, config);
  try {
    await engineCall('POST', `/containers/${segment(id)}/start`, {
      verb: 'start',
      timeoutMs: START_TIMEOUT_MS,
    });
  } catch (error) {
    await engineCall('DELETE', `/containers/${segment(id)}?force=1`, { verb: 'rm' }).catch(() => undefined);
    throw error;
  }
  return id;
}

/** The engine refused a create because the name is taken (409 Conflict). */
export const isNameConflict = (error: unknown): boolean =>
  error instanceof DockerEngineError && error.status === 409;
