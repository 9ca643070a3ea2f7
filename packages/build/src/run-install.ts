import {
  BOX_USER,
  CPU_PERIOD,
  cpuQuota,
  DEPS_SRC,
  engine,
  type HeldStdin,
  INSTALL_LOG_CONFIG,
  INSTALL_PID1,
  type InstallContainerConfig,
  installContainerName,
  parseSize,
  processUlimits,
} from '@ca-sandbox/docker';
import { InvariantError, sanitizeForTerminal } from '@ca-sandbox/docker/contracts';
import type { BuildLimits } from './build-argv.js';
import { removeBuildImages } from './build-cleanup.js';
import { type LayerWatch, watchInstallLayer } from './deps-size.js';
import { LABEL_BUILD_ID } from './dockerfile.js';
import { DepsImageTooLargeError, ImageBuildError, ImageBuildTimeoutError } from './errors.js';
import { type InstallLog, meaningfulLines } from './install-log.js';

export interface RunInstallInput {
  /** The deps image being made, as the errors name it. */
  image: string;
  /**
   * The image the install runs in: the base's prep image, or (with Claude Code) renderDockerfile's
   * by id; its container's layer is the install.
   */
  preInstallImage: string;
  /** The image's variables (installEnv), set on the container: the commit keeps them. */
  env?: string[];
  /** The manifests as a tar (manifestsArchive), put at /deps/src before the container starts. */
  manifests?: Buffer;
  /** installCommand's argv. */
  command: string[];
  /** `none`, `bridge`, or the sandbox's internal egress network. */
  network: string;
  limits: BuildLimits;
  /** The build's labels and its id: the container is found by them (`destroy`, `prune`, clean-up). */
  labels: Record<string, string>;
  buildId: string;
  log: (line: string) => void;
  installLog: InstallLog;
  /** What is left of the build's time limit when the install starts. */
  timeoutMs: number;
  /** The build's time limit as set (buildTimeoutMs), as a timeout's error names it. */
  timeLimitMs: number;
  maxDepsSize: number;
  /** The CA bundle the install trusts (the caCertificates setting), as a failure names it; none: undefined. */
  caFile?: string | undefined;
  signal?: AbortSignal;
  /**
   * Every line, cleaned, as it comes (the returned tail holds the last TAIL_LINES only), with the
   * install layer's size at the watch's last look (0 before the first).
   */
  onLine?: (line: string, layerBytes: number) => void;
}

/** The install's container, exited 0, and the last lines of its output. */
export interface InstallRun {
  /** Its id: the caller commits it, then removes it (removeInstallContainer). */
  container: string;
  tail: string[];
}

/** Where one line of install output is cut (a minified bundle printed by an install script). */
const MAX_LOG_LINE = 2000;
/** Lines of output kept for the error (the toolchain probe's among them on success). */
const TAIL_LINES = 200;
/** A line longer than this without a newline is passed on in pieces. */
const MAX_PENDING_LINE = 8192;

type StopReason = 'timeout' | 'abort' | 'disk';

/** How a failure names the install in its message. */
const INSTALL_STEP = 'the install step';

/** The install container's body: the box's hardening where an install can have it (install-container.ts). */
export function installContainerConfig(input: RunInstallInput): InstallContainerConfig {
  const memory = parseSize(input.limits.memory);
  if (memory === undefined) throw new InvariantError(`invalid build memory ${input.limits.memory}`);
  return {
    Image: input.preInstallImage,
    Entrypoint: [],
    Cmd: [...INSTALL_PID1],
    User: BOX_USER,
    ...(input.env ? { Env: input.env } : {}),
    Labels: input.labels,
    OpenStdin: true,
    StdinOnce: true,
    HostConfig: {
      CapDrop: ['ALL'],
      SecurityOpt: ['no-new-privileges'],
      ReadonlyRootfs: false,
      Memory: memory,
      MemorySwap: memory,
      CpuPeriod: CPU_PERIOD,
      CpuQuota: cpuQuota(input.limits.cpus),
      PidsLimit: input.limits.processes,
      // No core dumps, a file size cap and (per uid) a process cap: what the install step checks
      // it got from the inside (installConfinementRows).
      Ulimits: processUlimits({ fileSize: input.limits.fileSize, processes: input.limits.processes }),
      // INSTALL_PID1 is its init: `kill -KILL -1` in the step reaches every process the install
      // left and spares that one (installScript).
      Init: false,
      NetworkMode: input.network,
      LogConfig: INSTALL_LOG_CONFIG,
    },
  };
}

/**
 * Runs the install as a container of the pre-install image under supervision (time limit, abort
 * signal, the deps cap watched on its layer), its output followed line by line; resolves once it
 * exited 0 with the stopped container (committed by the caller: its layer is the deps image's).
 * A stopped or failed install leaves nothing: its container and the build's images are removed
 * before the error.
 */
export async function runInstall(input: RunInstallInput): Promise<InstallRun> {
  const { image, signal } = input;
  const name = installContainerName(input.buildId);
  // The kept log says what it is the log of (the build's id finds what the build made).
  input.installLog.write(
    `ca-sandbox: the install for ${image}, container ${name} (${LABEL_BUILD_ID}=${input.buildId}), network ${input.network}`,
  );
  const tail: string[] = [];
  let seen = () => 0;
  const onLine = (line: string) => {
    // The install's output is the repo's: no control sequences reach the caller's terminal.
    const clean = sanitizeForTerminal(line, MAX_LOG_LINE);
    tail.push(clean);
    if (tail.length > TAIL_LINES) tail.shift();
    input.installLog.write(clean);
    input.log(clean);
    input.onLine?.(clean, seen());
  };
  let container: string | undefined;
  let stopped: StopReason | undefined;
  // SIGKILL at once (`stop -t 0`) to every process in it, as the legacy builder's cancel did.
  const stop = (why: StopReason) => {
    if (stopped) return;
    stopped = why;
    if (container) void engine.container.stop(container, { timeoutSeconds: 0 }).catch(() => undefined);
  };
  const onAbort = () => stop('abort');
  const timer = setTimeout(() => stop('timeout'), input.timeoutMs);
  signal?.addEventListener('abort', onAbort, { once: true });
  let watch: LayerWatch | undefined;
  let stdin: HeldStdin | undefined;
  let succeeded = false;
  try {
    container = await engine.container.createInstall(name, installContainerConfig(input));
    const id = container;
    watch = watchInstallLayer({
      container: id,
      maxDepsSize: input.maxDepsSize,
      stopped: () => stopped !== undefined,
      onOverCap: () => stop('disk'),
    });
    const layer = watch;
    seen = () => layer.seen;
    // The manifests, into the container's own layer before anything runs (the engine resolves the
    // entries inside the container; they are our own context's regular files).
    if (input.manifests) await engine.container.putArchive(id, DEPS_SRC, input.manifests);
    // Held before the start: the container (its PID 1 reads it) lives as long as this process
    // does, whatever the repo's code does in it; released once the install exited.
    stdin = await engine.container.holdStdin(id);
    // Stopped (aborted) before the start: nothing of the repo's runs.
    if (!stopped) await engine.container.start(id);
    let exitCode: number | undefined;
    if (!stopped) {
      // The install, as an exec: its output (one stream: the script merges stderr) comes over it.
      const step = engine.exec.start(
        id,
        { cmd: input.command, user: BOX_USER },
        { stdout: 'pipe', stderr: 'pipe' },
      );
      const read = Promise.all([pumpLines(step.stdout, onLine), pumpLines(step.stderr, onLine)]);
      const end = await step;
      // Every line, the last unterminated one too, before the tail is read.
      await read;
      exitCode = end.exitCode;
      // The engine could not run it at all (its own words, never the repo's).
      const why = end.notStarted?.message ?? (exitCode === undefined ? end.error?.message : undefined);
      if (why && !stopped) onLine(`ca-sandbox: the install could not run: ${why}`);
    }
    // Its PID 1 ends on the released stdin, and with it anything left: the container is stopped
    // (nothing of the repo's runs) before the caller commits it.
    stdin.release();
    await engine.container.wait(id).catch(() => undefined);
    await watch.stop();
    if (exitCode === 0 && !stopped) {
      succeeded = true;
      return { container: id, tail };
    }
    const report = {
      details: meaningfulLines(tail),
      logFile: input.installLog.path,
      step: INSTALL_STEP,
      trust: { caFile: input.caFile },
    };
    const output = tail.join('\n');
    if (stopped === 'timeout') throw new ImageBuildTimeoutError(image, input.timeLimitMs, output, report);
    if (stopped === 'disk')
      throw new DepsImageTooLargeError(image, input.maxDepsSize, watch.written, 'install');
    throw new ImageBuildError(image, exitCode ?? 137, output, input.limits.memory, report);
  } finally {
    stdin?.release();
    void watch?.stop();
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
    if (!succeeded) {
      if (container) await removeInstallContainer(container);
      // The pre-install image's steps (untagged; with Claude Code only): found by the build id.
      await removeBuildImages(input.buildId);
    }
  }
}

/** Removes an install container (killed if it still runs); absent is fine. */
export async function removeInstallContainer(container: string): Promise<void> {
  // With its anonymous volumes: a base image's VOLUME gets one in every container made from it.
  await engine.container.remove(container, { force: true, volumes: true }).catch(() => false);
}

/**
 * Splits a stream into lines (CR LF or LF) for `onLine`; an unterminated rest comes at the end.
 * Resolves once the stream ended and its last line was passed on.
 */
function pumpLines(stream: NodeJS.ReadableStream | null, onLine: (line: string) => void): Promise<void> {
  if (!stream) return Promise.resolve();
  let rest = '';
  stream.on('data', (chunk: Buffer) => {
    const lines = (rest + chunk.toString('utf8')).split(/\r?\n/);
    rest = lines.pop() ?? '';
    for (const line of lines) onLine(line);
    if (rest.length > MAX_PENDING_LINE) {
      onLine(rest);
      rest = '';
    }
  });
  return new Promise((resolve) => {
    stream.on('end', () => {
      if (rest) onLine(rest);
      resolve();
    });
  });
}
