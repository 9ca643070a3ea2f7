// Typed docker verbs per object kind, over the Engine API: the only way the other packages reach
// the engine. Answers are checked against the zod schemas of inspect.ts; a refused call throws
// DockerEngineError (a DockerCommandError) with the engine's own message, a missing object
// DockerNotFoundError, an engine that does not answer DockerUnavailableError. Where a verb still
// runs the docker CLI (the hardened `docker run`, the legacy-builder `docker build`), it says so.

import type { IncomingMessage } from 'node:http';
import { PassThrough, type Readable } from 'node:stream';
import { z } from 'zod';
import { createContainer, runContainerConfig, type SandboxContainerConfig } from './container-create.js';
import { listLabeled, removeObject, resizeExec } from './engine-api.js';
import {
  engineCall,
  engineJson,
  engineRequest,
  engineStream,
  labelFilters,
  query,
  segment,
  statusError,
} from './engine-client.js';
import {
  collectExec,
  createExec,
  demultiplex,
  type ExecChild,
  type ExecOutcome,
  type ExecOutput,
  type ExecSpec,
  inspectExec,
  internalExecSpec,
  startExec,
} from './engine-exec.js';
import { InvariantError } from './error-base.js';
import { DockerEngineError, DockerNotFoundError, DockerResponseError } from './errors.js';
import { type DockerResult, type DockerRunOptions, docker } from './exec-docker.js';
import { dockerInfo } from './info.js';
import {
  type ContainerInspect,
  type ImageInspect,
  inspectContainer,
  inspectImage,
  inspectVolume,
  type NetworkInspect,
  NetworkInspectSchema,
  parseAnswer,
  type VolumeInspect,
} from './inspect.js';
import {
  type CommitChanges,
  commitContainer,
  createInstallContainer,
  type HeldStdin,
  holdInstallStdin,
  type InstallContainerConfig,
} from './install-container.js';
import type { InternalExecOptions } from './internal-exec.js';

/** Selects objects by `key=value` labels (all must match) and other engine filters. */
export interface ListFilter {
  labels?: readonly string[];
  /** Raw engine filters (`ancestor`, `dangling`, `reference`, `status`, ...). */
  filters?: Record<string, string[]>;
}

export interface ContainerSummary {
  id: string;
  name: string;
  image: string;
  /** The id of the image it runs (`sha256:…`; '' when the engine did not say). */
  imageId: string;
  state: string;
  labels: Record<string, string>;
}

export interface ImageSummary {
  id: string;
  tags: string[];
  labels: Record<string, string>;
  created: number;
  size: number;
}

const ContainerSummarySchema = z.array(
  z
    .object({
      Id: z.string(),
      Names: z.array(z.string()).nullish(),
      Image: z.string().optional().default(''),
      ImageID: z.string().optional().default(''),
      State: z.string().optional().default(''),
      Labels: z.record(z.string(), z.string()).nullish(),
    })
    .loose(),
);
const ImageSummarySchema = z.array(
  z
    .object({
      Id: z.string(),
      RepoTags: z.array(z.string()).nullish(),
      Labels: z.record(z.string(), z.string()).nullish(),
      Created: z.number().optional().default(0),
      Size: z.number().optional().default(0),
    })
    .loose(),
);
const VolumeListSchema = z.object({
  Volumes: z
    .array(z.object({ Name: z.string(), Labels: z.record(z.string(), z.string()).nullish() }).loose())
    .nullish(),
});
const NetworkListSchema = z.array(
  z.object({ Name: z.string(), Id: z.string(), Labels: z.record(z.string(), z.string()).nullish() }).loose(),
);
const HistorySchema = z.array(
  z
    .object({
      Id: z.string().optional().default(''),
      CreatedBy: z.string().optional().default(''),
      Size: z.number().optional().default(0),
      Tags: z.array(z.string()).nullish(),
    })
    .loose(),
);

/** Engine filters from `key=value` filter strings (`label=ca.sandbox=1`, `ancestor=img`). */
export function filterRecord(filters: readonly string[]): Record<string, string[]> {
  const record: Record<string, string[]> = {};
  for (const filter of filters) {
    const at = filter.indexOf('=');
    if (at <= 0) throw new InvariantError(`not a filter: ${JSON.stringify(filter)}`);
    const key = filter.slice(0, at);
    record[key] = [...(record[key] ?? []), filter.slice(at + 1)];
  }
  return record;
}

/** What is at a path of a container's files (ContainerVerbs.statPath). */
export interface PathStat {
  kind: 'directory' | 'symlink' | 'other';
  /** A link's target, as the engine resolves it in the container (an absolute path). */
  linkTarget: string;
}

/** Go's os.FileMode bits the engine's stat header carries (`mode`). */
const MODE_DIR = 2 ** 31;
const MODE_SYMLINK = 2 ** 27;
const PathStatSchema = z.object({ mode: z.number().int().nonnegative(), linkTarget: z.string().max(4096) });

/** The engine's `X-Docker-Container-Path-Stat` header (base64 JSON) as a PathStat. */
export function parsePathStat(header: string | string[] | undefined): PathStat {
  const text = typeof header === 'string' ? Buffer.from(header, 'base64').toString('utf8') : '';
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  const parsed = PathStatSchema.safeParse(json);
  if (!parsed.success) throw new DockerResponseError('docker stat gave no readable path stat');
  const { mode, linkTarget } = parsed.data;
  // Bit tests on a 32-bit mode: as numbers (JavaScript's bit operators would sign the top bit).
  const has = (bit: number) => Math.floor(mode / bit) % 2 === 1;
  const kind = has(MODE_SYMLINK) ? 'symlink' : has(MODE_DIR) ? 'directory' : 'other';
  return { kind, linkTarget };
}

function filtersOf(filter: ListFilter = {}): object {
  return labelFilters(filter.labels ?? [], filter.filters ?? {});
}

export interface ContainerVerbs {
  inspect(ref: string, options?: { size?: boolean }): Promise<ContainerInspect>;
  /** inspect, or undefined when there is no such container. */
  find(ref: string): Promise<ContainerInspect | undefined>;
  list(filter?: ListFilter & { all?: boolean }): Promise<ContainerSummary[]>;
  start(ref: string): Promise<void>;
  stop(ref: string, options?: { timeoutSeconds?: number }): Promise<void>;
  /** Freezes every process of a running container (the cgroup freezer); a paused one takes no exec. */
  pause(ref: string): Promise<void>;
  unpause(ref: string): Promise<void>;
  /** True when removed, false when it was not there. */
  remove(ref: string, options?: { force?: boolean; volumes?: boolean }): Promise<boolean>;
  /**
   * The log so far (`docker logs`), read as it comes and at most `maxBytes` of each stream kept
   * (default 16 MiB): a container's output can be far larger than a process may hold. `truncated`
   * says the log went on past the cap.
   */
  logs(
    ref: string,
    options?: { maxBytes?: number },
  ): Promise<{ stdout: string; stderr: string; truncated: boolean }>;
  /**
   * A tar stream of `path` in the container (what `docker cp ref:path -` writes), read as it
   * comes; DockerNotFoundError when the container or the path does not exist.
   */
  archive(ref: string, path: string): Promise<Readable>;
  /**
   * What is at `path` in the container's files, not following a link there (`HEAD .../archive`:
   * the engine's own stat, no process runs): a directory, a link (with its target) or anything
   * else; undefined when nothing is there.
   */
  statPath(ref: string, path: string): Promise<PathStat | undefined>;
  /**
   * Unpacks the tar `archive` into the directory `path` of the container's files (`PUT
   * .../archive`, what `docker cp - ref:path` does; the engine resolves every entry inside the
   * container's root), keeping each entry's owner and mode; a directory never replaces a file nor
   * a file a directory.
   */
  putArchive(ref: string, path: string, archive: Buffer): Promise<void>;
  /** Waits until it stops; its exit code. */
  wait(ref: string): Promise<number>;
  /**
   * How many times the kernel killed a process of the container for want of memory (its `oom`
   * events) from `sinceSeconds` (unix time, to the millisecond) until now: an exec'd command
   * that exited 137 was killed by the memory limit when this is not 0.
   */
  oomKillsSince(ref: string, sinceSeconds: number): Promise<number>;
  /**
   * Creates a sandbox container from the body @ca-sandbox/run made (the hardened configuration and
   * the gate that checks it live there), not started; its id. A taken name is a DockerEngineError
   * with status 409 (`isNameConflict`).
   */
  create(name: string, config: SandboxContainerConfig): Promise<string>;
  /** create, then start (`docker run --detach`); a failed start removes what was created. Its id. */
  run(name: string, config: SandboxContainerConfig): Promise<string>;
  /**
   * `docker logs --follow` as live streams (a gateway's readiness line), from `since` when given:
   * resolves when the container stops or kill() is called; never rejects (`error` says why not).
   */
  follow(ref: string, options?: { since?: Date; follow?: boolean }): LogFollow;
  /**
   * Creates a dependency install's container from the body @ca-sandbox/build made (its own shape:
   * a writable root, no init; cap-drop ALL, no-new-privileges, no mount), not started; its id.
   */
  createInstall(name: string, config: InstallContainerConfig): Promise<string>;
  /** Holds an install container's stdin (attached before its start) until released: holdInstallStdin. */
  holdStdin(ref: string): Promise<HeldStdin>;
  /** Commits a stopped container as a new, untagged image (`changes` on top of its config); the image's id. */
  commit(ref: string, changes: CommitChanges): Promise<string>;
}

/** A followed log: its two streams, and a stop. */
export type LogFollow = Promise<{ error?: Error }> & { stdout: Readable; stderr: Readable; kill(): void };

function followLogs(ref: string, options: { since?: Date; follow?: boolean } = {}): LogFollow {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let response: IncomingMessage | undefined;
  let killed = false;
  // `seconds.nanoseconds`, as the CLI sends it: a whole second would also match older lines.
  const ms = options.since?.getTime();
  const since =
    ms === undefined ? undefined : `${Math.floor(ms / 1000)}.${String(ms % 1000).padStart(3, '0')}000000`;
  const follow = options.follow === false ? undefined : 1;
  const path = `/containers/${segment(ref)}/logs${query({ follow, stdout: 1, stderr: 1, since })}`;
  const done = (async () => {
    try {
      response = await engineStream('GET', path, { verb: 'logs' });
      if (killed) response.destroy();
      await demultiplex(response, Buffer.alloc(0), stdout, stderr);
      return {};
    } catch (error) {
      return killed ? {} : { error: error as Error };
    } finally {
      stdout.end();
      stderr.end();
    }
  })();
  return Object.assign(done, {
    stdout,
    stderr,
    kill: () => {
      killed = true;
      response?.destroy();
    },
  });
}

export interface VolumeVerbs {
  create(
    name: string,
    options?: { labels?: Record<string, string>; driver?: string; driverOpts?: Record<string, string> },
  ): Promise<VolumeInspect>;
  inspect(name: string): Promise<VolumeInspect>;
  find(name: string): Promise<VolumeInspect | undefined>;
  list(filter?: ListFilter): Promise<{ name: string; labels: Record<string, string> }[]>;
  remove(name: string, options?: { force?: boolean }): Promise<boolean>;
}

export interface NetworkCreateOptions {
  driver?: string;
  internal?: boolean;
  enableIPv6?: boolean;
  options?: Record<string, string>;
  labels?: Record<string, string>;
}

export interface NetworkVerbs {
  create(name: string, options?: NetworkCreateOptions): Promise<NetworkInspect>;
  inspect(name: string): Promise<NetworkInspect>;
  find(name: string): Promise<NetworkInspect | undefined>;
  connect(network: string, container: string): Promise<void>;
  disconnect(network: string, container: string, options?: { force?: boolean }): Promise<void>;
  list(filter?: ListFilter): Promise<{ name: string; id: string; labels: Record<string, string> }[]>;
  remove(name: string): Promise<boolean>;
}

export interface ImageVerbs {
  inspect(ref: string): Promise<ImageInspect | undefined>;
  exists(ref: string): Promise<boolean>;
  list(filter?: ListFilter & { all?: boolean }): Promise<ImageSummary[]>;
  remove(ref: string, options?: { force?: boolean }): Promise<boolean>;
  /** Points the tag `repository:tag` at the image `ref` (moved from any image it named before). */
  tag(ref: string, repository: string, tag: string): Promise<void>;
  /** The `CreatedBy` of each layer, newest first. */
  history(ref: string): Promise<string[]>;
  /**
   * Each layer of the history, newest first: the image id it has locally ('<missing>' if none),
   * its bytes, and the tags that image has (an ancestor with tags is another image of its own).
   */
  layers(ref: string): Promise<{ id: string; size: number; createdBy: string; tags: string[] }[]>;
  /**
   * Pulls from a registry through the CLI: registry credentials (credential helpers, config.json
   * auths) are the CLI's to read, not ours. DockerEngineError with the message on failure.
   */
  pull(ref: string, options?: { timeoutMs?: number; signal?: AbortSignal }): Promise<void>;
  /**
   * `docker build` through the CLI with the legacy builder (DOCKER_BUILDKIT=0), buffered (the
   * Dockerfile may come as `input`): our own images only; a dependency install is a container
   * (`container.createInstall`), never a build step.
   */
  build(argv: readonly string[], options?: DockerRunOptions): Promise<DockerResult>;
}

export interface ExecVerbs {
  create(container: string, spec: ExecSpec): Promise<string>;
  inspect(id: string): Promise<{ running: boolean; exitCode: number | undefined; pid: number | undefined }>;
  /**
   * Starts and streams (see startExec). With `spec.tty`, a terminal session (the shell): one raw
   * stream on stdout, sized with `resize`, its exit code from exec inspect.
   */
  start(container: string, spec: ExecSpec, output?: { stdout?: ExecOutput; stderr?: ExecOutput }): ExecChild;
  /** Runs to the end and returns the output (see collectExec). */
  run(
    container: string,
    spec: ExecSpec,
    options?: { input?: string | Buffer | Readable; timeoutMs?: number; signal?: AbortSignal },
  ): Promise<ExecOutcome>;
  /** One of our own commands (PATH fixed, `env -i`), run to the end. */
  internal(
    container: string,
    command: readonly string[],
    options: InternalExecOptions & {
      input?: string | Buffer | Readable;
      timeoutMs?: number;
      signal?: AbortSignal;
    },
  ): Promise<ExecOutcome>;
  /** Sets the terminal size of a running TTY exec (what `docker exec -t` does on SIGWINCH); false when refused. */
  resize(id: string, rows: number, columns: number): Promise<boolean>;
}

export interface SystemVerbs {
  info: typeof dockerInfo;
  /** The engine answers `/_ping`. */
  ping(): Promise<boolean>;
}

export interface Engine {
  container: ContainerVerbs;
  volume: VolumeVerbs;
  network: NetworkVerbs;
  image: ImageVerbs;
  exec: ExecVerbs;
  system: SystemVerbs;
  /** Containers, volumes or networks by labels, with one label's value (see engine-api.ts). */
  listLabeled: typeof listLabeled;
}

const labelsOf = (labels: Record<string, string> | null | undefined) => labels ?? {};

const DEFAULT_LOG_MAX_BYTES = 16 * 1024 * 1024;

/**
 * `docker logs` without follow, streamed: each stream keeps its first `maxBytes`, and once either
 * passes its cap the connection is dropped (the rest is never read). A missing container throws
 * DockerNotFoundError, as the buffered call did.
 */
async function readLogs(
  ref: string,
  options: { maxBytes?: number } = {},
): Promise<{ stdout: string; stderr: string; truncated: boolean }> {
  const max = options.maxBytes ?? DEFAULT_LOG_MAX_BYTES;
  const read = followLogs(ref, { follow: false });
  let truncated = false;
  const keep = (stream: Readable) => {
    const chunks: Buffer[] = [];
    let size = 0;
    stream.on('data', (chunk: Buffer) => {
      if (truncated) return;
      const room = max - size;
      if (chunk.length > room) {
        chunks.push(chunk.subarray(0, room));
        size = max;
        truncated = true;
        read.kill();
        return;
      }
      chunks.push(chunk);
      size += chunk.length;
    });
    return () => Buffer.concat(chunks).toString('utf8');
  };
  const stdout = keep(read.stdout);
  const stderr = keep(read.stderr);
  const { error } = await read;
  if (error) throw error;
  return { stdout: stdout(), stderr: stderr(), truncated };
}

/** The answer, or undefined when the engine says the object does not exist (404); other failures throw. */
async function unlessMissing<T>(answer: Promise<T>): Promise<T | undefined> {
  try {
    return await answer;
  } catch (error) {
    if (error instanceof DockerNotFoundError) return undefined;
    throw error;
  }
}

const container: ContainerVerbs = {
  inspect: (ref, options) => inspectContainer(ref, options),
  find: (ref) => unlessMissing(inspectContainer(ref)),
  async list(filter = {}) {
    const path = `/containers/json${query({ all: filter.all === false ? undefined : 1, filters: filtersOf(filter) })}`;
    const answer = parseAnswer(
      ContainerSummarySchema,
      'container ls',
      await engineJson('GET', path, { verb: 'container ls' }),
    );
    return answer.map((item) => ({
      id: item.Id,
      name: (item.Names?.[0] ?? '').replace(/^\//, ''),
      image: item.Image,
      imageId: item.ImageID,
      state: item.State,
      labels: labelsOf(item.Labels),
    }));
  },
  async start(ref) {
    // 304: already running, which is what was asked.
    const response = await engineRequest('POST', `/containers/${segment(ref)}/start`, { verb: 'start' });
    if (response.status !== 204 && response.status !== 304)
      throw statusError('start', response.status, response.body);
  },
  async stop(ref, options = {}) {
    const path = `/containers/${segment(ref)}/stop${query({ t: options.timeoutSeconds })}`;
    const timeoutMs = ((options.timeoutSeconds ?? 10) + 60) * 1000;
    const response = await engineRequest('POST', path, { verb: 'stop', timeoutMs });
    if (response.status !== 204 && response.status !== 304)
      throw statusError('stop', response.status, response.body);
  },
  async pause(ref) {
    const response = await engineRequest('POST', `/containers/${segment(ref)}/pause`, { verb: 'pause' });
    if (response.status !== 204) throw statusError('pause', response.status, response.body);
  },
  async unpause(ref) {
    const response = await engineRequest('POST', `/containers/${segment(ref)}/unpause`, { verb: 'unpause' });
    if (response.status !== 204) throw statusError('unpause', response.status, response.body);
  },
  remove: (ref, options = {}) => removeObject('container', ref, options),
  logs: readLogs,
  archive: (ref, path) =>
    engineStream('GET', `/containers/${segment(ref)}/archive${query({ path })}`, {
      verb: 'cp',
    }) as Promise<Readable>,
  async statPath(ref, path) {
    const response = await engineRequest('HEAD', `/containers/${segment(ref)}/archive${query({ path })}`, {
      verb: 'stat',
    });
    if (response.status === 404) return undefined;
    if (response.status !== 200) throw statusError('stat', response.status, response.body);
    return parsePathStat(response.headers?.['x-docker-container-path-stat']);
  },
  async putArchive(ref, path, archive) {
    const response = await engineRequest(
      'PUT',
      `/containers/${segment(ref)}/archive${query({ path, noOverwriteDirNonDir: 'true' })}`,
      { verb: 'cp', raw: { data: archive, contentType: 'application/x-tar' } },
    );
    if (response.status !== 200) throw statusError('cp', response.status, response.body);
  },
  async wait(ref) {
    const answer = (await engineJson('POST', `/containers/${segment(ref)}/wait`, {
      verb: 'wait',
      timeoutMs: 24 * 3600 * 1000,
    })) as { StatusCode?: unknown };
    if (typeof answer?.StatusCode !== 'number')
      throw new DockerResponseError('docker wait gave no status code');
    return answer.StatusCode;
  },
  async oomKillsSince(ref, sinceSeconds) {
    // until = now: the engine answers the events logged so far and ends the stream.
    const until = Math.ceil(Date.now() / 1000);
    const since = sinceSeconds.toFixed(3);
    const path = `/events${query({ since, until, filters: { container: [ref], event: ['oom'] } })}`;
    const response = await engineRequest('GET', path, { verb: 'events' });
    if (response.status !== 200) throw statusError('events', response.status, response.body);
    // One JSON object per event; only the count is read (nothing of it is shown).
    return response.body
      .toString('utf8')
      .split('\n')
      .filter((line) => line.includes('"Action":"oom"')).length;
  },
  create: createContainer,
  run: runContainerConfig,
  follow: followLogs,
  createInstall: createInstallContainer,
  holdStdin: holdInstallStdin,
  commit: commitContainer,
};

const volume: VolumeVerbs = {
  async create(name, options = {}) {
    await engineJson('POST', '/volumes/create', {
      verb: 'volume create',
      body: {
        Name: name,
        Driver: options.driver ?? 'local',
        Labels: options.labels ?? {},
        ...(options.driverOpts ? { DriverOpts: options.driverOpts } : {}),
      },
    });
    return inspectVolume(name);
  },
  inspect: (name) => inspectVolume(name),
  find: (name) => unlessMissing(inspectVolume(name)),
  async list(filter = {}) {
    const answer = parseAnswer(
      VolumeListSchema,
      'volume ls',
      await engineJson('GET', `/volumes${query({ filters: filtersOf(filter) })}`, { verb: 'volume ls' }),
    );
    return (answer.Volumes ?? []).map((item) => ({ name: item.Name, labels: labelsOf(item.Labels) }));
  },
  remove: (name, options = {}) => removeObject('volume', name, options),
};

async function inspectNetwork(name: string): Promise<NetworkInspect> {
  const answer = await engineJson('GET', `/networks/${segment(name)}`, { verb: 'network inspect' });
  return parseAnswer(NetworkInspectSchema, 'network inspect', answer);
}

const network: NetworkVerbs = {
  async create(name, options = {}) {
    await engineJson('POST', '/networks/create', {
      verb: 'network create',
      body: {
        Name: name,
        CheckDuplicate: true,
        Driver: options.driver ?? 'bridge',
        Internal: options.internal === true,
        ...(options.enableIPv6 !== undefined ? { EnableIPv6: options.enableIPv6 } : {}),
        Options: options.options ?? {},
        Labels: options.labels ?? {},
      },
    });
    return inspectNetwork(name);
  },
  inspect: inspectNetwork,
  find: (name) => unlessMissing(inspectNetwork(name)),
  async connect(name, ref) {
    await engineCall('POST', `/networks/${segment(name)}/connect`, {
      verb: 'network connect',
      body: { Container: ref },
    });
  },
  async disconnect(name, ref, options = {}) {
    await engineCall('POST', `/networks/${segment(name)}/disconnect`, {
      verb: 'network disconnect',
      body: { Container: ref, Force: options.force === true },
    });
  },
  async list(filter = {}) {
    const answer = parseAnswer(
      NetworkListSchema,
      'network ls',
      await engineJson('GET', `/networks${query({ filters: filtersOf(filter) })}`, { verb: 'network ls' }),
    );
    return answer.map((item) => ({ name: item.Name, id: item.Id, labels: labelsOf(item.Labels) }));
  },
  remove: (name) => removeObject('network', name),
};

const image: ImageVerbs = {
  inspect: (ref) => inspectImage(ref),
  exists: async (ref) => (await inspectImage(ref)) !== undefined,
  async list(filter = {}) {
    const path = `/images/json${query({ all: filter.all ? 1 : undefined, filters: filtersOf(filter) })}`;
    const answer = parseAnswer(
      ImageSummarySchema,
      'image ls',
      await engineJson('GET', path, { verb: 'image ls' }),
    );
    return answer.map((item) => ({
      id: item.Id,
      tags: (item.RepoTags ?? []).filter((tag) => tag !== '<none>:<none>'),
      labels: labelsOf(item.Labels),
      created: item.Created,
      size: item.Size,
    }));
  },
  remove: (ref, options = {}) => removeObject('image', ref, options),
  async tag(ref, repository, tag) {
    await engineJson('POST', `/images/${segment(ref)}/tag${query({ repo: repository, tag })}`, {
      verb: 'image tag',
    });
  },
  async history(ref) {
    const answer = parseAnswer(
      HistorySchema,
      'image history',
      await engineJson('GET', `/images/${segment(ref)}/history`, { verb: 'image history' }),
    );
    return answer.map((layer) => layer.CreatedBy);
  },
  async layers(ref) {
    const answer = parseAnswer(
      HistorySchema,
      'image history',
      await engineJson('GET', `/images/${segment(ref)}/history`, { verb: 'image history' }),
    );
    return answer.map((layer) => ({
      id: layer.Id,
      size: layer.Size,
      createdBy: layer.CreatedBy,
      tags: layer.Tags ?? [],
    }));
  },
  async pull(ref, options = {}) {
    const pulled = await docker(['pull', '--quiet', '--', ref], {
      allowFailure: true,
      timeoutMs: options.timeoutMs ?? 300_000,
      ...(options.signal ? { signal: options.signal } : {}),
    });
    if (pulled.exitCode !== 0) throw new DockerEngineError('pull', 0, pulled.stderr);
  },
  async build(argv, options) {
    if (argv[0] !== 'build') throw new InvariantError('engine.image.build: the argv must start with `build`');
    return docker(argv, options);
  },
};

const exec: ExecVerbs = {
  create: createExec,
  inspect: inspectExec,
  start: startExec,
  run: collectExec,
  internal: (ref, command, options) => {
    const { input, timeoutMs, signal, ...rest } = options;
    return collectExec(ref, internalExecSpec(command, rest), {
      ...(input !== undefined ? { input } : {}),
      ...(timeoutMs !== undefined ? { timeoutMs } : {}),
      ...(signal ? { signal } : {}),
    });
  },
  resize: resizeExec,
};

const system: SystemVerbs = {
  info: dockerInfo,
  async ping() {
    try {
      return (await engineRequest('GET', '/_ping', { verb: 'ping', timeoutMs: 10_000 })).status === 200;
    } catch {
      return false;
    }
  },
};

/** The engine, by object kind. */
export const engine: Engine = { container, volume, network, image, exec, system, listLabeled };
