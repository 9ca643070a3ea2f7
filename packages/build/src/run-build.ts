import { dockerSpawnError, engine } from '@ca-sandbox/docker';
import { sanitizeForTerminal } from '@ca-sandbox/docker/contracts';
import { removeBuildContainers, removeBuildImages } from './build-cleanup.js';
import { isBuilderFraming } from './build-log.js';
import { watchInstallLayer } from './deps-size.js';
import { LABEL_BUILD_ID } from './dockerfile.js';
import { DepsImageTooLargeError, ImageBuildError, ImageBuildTimeoutError } from './errors.js';
import { type InstallLog, meaningfulLines } from './install-log.js';

export interface RunBuildInput {
  argv: string[];
  image: string;
  log: (line: string) => void;
  installLog: InstallLog;
  buildId: string;
  timeoutMs: number;
  memory: string;
  baseImage: string;
  dockerfile: string;
  maxDepsSize: number;
  buildLabels: Record<string, string>;
  signal?: AbortSignal;
  /**
   * Every line, cleaned, as it comes (the returned tail holds the last TAIL_LINES only), with the
   * install layer's size at the watch's last look (0 before the first).
   */
  onLine?: (line: string, layerBytes: number) => void;
}

/** Where one line of build output is cut (a minified bundle printed by an install script). */
const MAX_LOG_LINE = 2000;

/** Grace between SIGTERM and SIGKILL of the docker client once the build is stopped. */
const KILL_GRACE_MS = 5000;
/** Lines of build output kept for the error (the toolchain probe's among them on success). */
const TAIL_LINES = 200;
/** A line longer than this without a newline is passed on in pieces. */
const MAX_PENDING_LINE = 8192;

type StopReason = 'timeout' | 'abort' | 'disk';

/**
 * Runs `docker build` under supervision (time limit, abort signal, the deps cap watched on the
 * running layer); returns the last lines of its output. A stopped or failed build leaves nothing:
 * its RUN containers and the images of the steps that passed are removed before the error.
 */
export async function runBuild(input: RunBuildInput): Promise<string[]> {
  const { argv, image, signal } = input;
  const startedAt = Date.now();
  const child = engine.image.buildStream(argv);
  const tail: string[] = [];
  // On a failed step the legacy builder prints "The command '<the step's script>' returned a
  // non-zero code: N" on its stderr, our script over hundreds of lines: the tail keeps its first
  // and last line only, so the step's own last lines (the cause) stay in it (meaningfulLines reads
  // them). The step's output (the repo's) comes on stdout: nothing of it can start or end that.
  let echoingScript = false;
  const onLine = (line: string, builderStderr = false) => {
    // Output of install scripts is the repo's: no control sequences reach the caller's terminal.
    const clean = sanitizeForTerminal(line, MAX_LOG_LINE);
    const closesEcho = builderStderr && / returned a non-zero code: \d+$/.test(clean);
    const echoed = builderStderr && echoingScript && !closesEcho;
    if (builderStderr) echoingScript = (echoingScript || clean.startsWith("The command '")) && !closesEcho;
    if (!echoed) tail.push(clean);
    if (tail.length > TAIL_LINES) tail.shift();
    // The kept log has everything; the caller sees the install's own output.
    input.installLog.write(clean);
    if (!isBuilderFraming(clean)) input.log(clean);
    input.onLine?.(clean, watch.seen);
  };
  let stopped: StopReason | undefined;
  let killTimer: NodeJS.Timeout | undefined;
  const stop = (why: StopReason) => {
    stopped ??= why;
    child.kill('SIGTERM');
    killTimer ??= setTimeout(() => child.kill('SIGKILL'), KILL_GRACE_MS);
  };
  const onAbort = () => stop('abort');
  const timer = setTimeout(() => stop('timeout'), input.timeoutMs);
  signal?.addEventListener('abort', onAbort, { once: true });
  const watch = watchInstallLayer({
    // This build's containers only: another build of the same repo name has the same labels but not its id.
    buildLabels: { ...input.buildLabels, [LABEL_BUILD_ID]: input.buildId },
    dockerfile: input.dockerfile,
    maxDepsSize: input.maxDepsSize,
    stopped: () => stopped !== undefined,
    onOverCap: () => stop('disk'),
  });
  // Read from here on (the same tick as the spawn: nothing is lost), once `watch` exists.
  pumpLines(child.stdout, (line) => onLine(line));
  pumpLines(child.stderr, (line) => onLine(line, true));
  try {
    const result = await child;
    await watch.stop();
    if (stopped) {
      // The daemon cancels a legacy build whose client went away, but removes the RUN container
      // asynchronously: make sure it is gone before the caller hears about the failure.
      await removeBuildContainers(input.buildId, input.baseImage, input.dockerfile, startedAt);
    }
    if (result.exitCode === 0 && !stopped) return tail;
    // A failed build leaves the images of the steps that passed (untagged): found by the build id.
    await removeBuildImages(input.buildId);
    const report = { details: meaningfulLines(tail), logFile: input.installLog.path };
    const output = tail.join('\n');
    if (stopped === 'timeout') throw new ImageBuildTimeoutError(image, input.timeoutMs, output, report);
    if (stopped === 'disk')
      throw new DepsImageTooLargeError(image, input.maxDepsSize, watch.written, 'install');
    if (result.exitCode === undefined) throw dockerSpawnError(argv, undefined, output, result);
    throw new ImageBuildError(image, result.exitCode, output, input.memory, report);
  } finally {
    // Already stopped on every path but a throw; nothing to wait for then.
    void watch.stop();
    clearTimeout(timer);
    clearTimeout(killTimer);
    signal?.removeEventListener('abort', onAbort);
  }
}

/** Splits a stream into lines (CR LF or LF) for `onLine`; an unterminated rest comes at the end. */
function pumpLines(stream: NodeJS.ReadableStream | null | undefined, onLine: (line: string) => void): void {
  let rest = '';
  stream?.on('data', (chunk: Buffer) => {
    const lines = (rest + chunk.toString('utf8')).split(/\r?\n/);
    rest = lines.pop() ?? '';
    for (const line of lines) onLine(line);
    if (rest.length > MAX_PENDING_LINE) {
      onLine(rest);
      rest = '';
    }
  });
  stream?.on('end', () => rest && onLine(rest));
}
