import { SEEDED_BASE_IMAGES } from '@ca-sandbox/config';
import { CaSandboxError, type ConfinementRow, formatSize } from '@ca-sandbox/docker';
import { failedChecksText } from '@ca-sandbox/docker/contracts';
import { causeLine } from './install-log.js';
import { saysUntrustedCertificate, untrustedCertificateClause } from './untrusted-certificate.js';

/** The options of prepareImage/readManifests do not validate (exit 2). */
export class InvalidBuildOptionsError extends CaSandboxError {
  readonly kind = 'usage';
  readonly code = 'INVALID_BUILD_OPTIONS';
}

/** The repo's manifest set is over a cap (count, one file's size, total size). */
export class ManifestLimitError extends CaSandboxError {
  readonly kind = 'failure';
  readonly code = 'MANIFEST_LIMIT';
  constructor(
    readonly limit: 'maxFiles' | 'maxFileBytes' | 'maxTotalBytes',
    readonly max: number,
    detail: string,
  ) {
    super(`manifest ${detail} is over the limit ${limit}=${max}`);
  }
}

/** Reading the manifests out of the helper container failed (tar error, exec failure). */
export class ManifestReadError extends CaSandboxError {
  readonly kind = 'failure';
  readonly code = 'MANIFEST_READ';
}

/**
 * How to get a base image for `provider`: seed-images.sh builds some (SEEDED_BASE_IMAGES); for the
 * others only an image the user builds or a registry can answer. Shared by create's error and doctor.
 */
export function baseImageHint(provider: string): string {
  const name =
    `name a local one as "baseImages": {"${provider}": ...} in the configuration file (ca-sandbox config path), ` +
    `or with CA_SANDBOX_BASE_IMAGE_${provider.toUpperCase()} or --base-image`;
  return provider in SEEDED_BASE_IMAGES
    ? `seed the local images with scripts/seed-images.sh (scripts/setup.sh names them in the configuration file), or ${name}`
    : `scripts/seed-images.sh builds no ${provider} image: build one with the ${provider} toolchain (or allow docker pull) and ${name}`;
}

/** The base image is neither in the local store nor pullable. */
export class BaseImageMissingError extends CaSandboxError {
  readonly kind = 'prerequisite';
  readonly code = 'BASE_IMAGE_MISSING';
  declare readonly hint: string;
  constructor(
    readonly image: string,
    readonly provider: string,
  ) {
    super(`base image ${image} for provider ${provider} is neither local nor pullable`, {
      hint: baseImageHint(provider),
    });
  }
}

/** `--builder nixpacks` was asked for and nixpacks is not on PATH. */
export class NixpacksMissingError extends CaSandboxError {
  readonly kind = 'prerequisite';
  readonly code = 'NIXPACKS_MISSING';
  override readonly hint =
    'install nixpacks (curl -sSL https://nixpacks.com/install.sh | bash, or see https://nixpacks.com/docs/install), or use --builder builtin';
  constructor(detail = 'nixpacks was not found on PATH') {
    super(detail);
  }
}

/** nixpacks produced a plan we refuse (bad shape, unsafe values): the plan is repo-controlled. */
export class NixpacksPlanError extends CaSandboxError {
  readonly kind = 'failure';
  readonly code = 'NIXPACKS_PLAN';
}

/** A base image reference or the CA bundle named by the user cannot be used. */
export class BuildConfigError extends CaSandboxError {
  readonly kind = 'usage';
  readonly code = 'BUILD_CONFIG';
}

/** What a failed build leaves to explain itself: the cause lines and the kept full log. */
export interface BuildFailureReport {
  /** The last meaningful lines of the install output (npm ERR!, gyp ERR!, pip, go, ...). */
  details?: string[];
  /** The full build output on the host (under the user's state dir). */
  logFile?: string;
  /** What failed, for the message: `docker build` (our own images) unless said (`the install step`). */
  step?: string;
  /**
   * The repo's install: the CA bundle it trusted (`caFile`, undefined: none). An output that says a
   * certificate could not be verified then names the setting (untrusted-certificate.ts).
   */
  trust?: { caFile: string | undefined };
}

/** The clause a failed install's message gets when its output says a certificate was not trusted. */
function trustClause(output: string, report: BuildFailureReport): string {
  return report.trust && saysUntrustedCertificate(output)
    ? untrustedCertificateClause(report.trust.caFile)
    : '';
}

/** The dependency image's install (or a build of ours) failed: the message names the cause, `details` the lines. */
export class ImageBuildError extends CaSandboxError {
  readonly kind = 'failure';
  readonly code = 'IMAGE_BUILD_FAILED';
  readonly details: string[];
  readonly logFile?: string;
  constructor(
    readonly image: string,
    readonly exitCode: number,
    readonly output: string,
    memoryLimit?: string,
    report: BuildFailureReport = {},
  ) {
    const details = report.details ?? [];
    const cause = causeLine(details) ?? lastLine(output);
    super(
      `dependency install failed (${report.step ?? 'docker build'} of ${image} exited ${exitCode}): ${cause || 'no output'}` +
        (memoryLimit && KILLED.test(output)
          ? ` (an install process was killed: likely over the memory limit ${memoryLimit}, option buildMemory)`
          : '') +
        trustClause(output, report),
      { hint: logHint(report) },
    );
    this.details = details;
    if (report.logFile) this.logFile = report.logFile;
  }
}

/** The install (or a build of ours) ran past its wall-clock limit: it was killed and its container removed. */
export class ImageBuildTimeoutError extends CaSandboxError {
  readonly kind = 'failure';
  readonly code = 'IMAGE_BUILD_TIMEOUT';
  readonly details: string[];
  readonly logFile?: string;
  constructor(
    readonly image: string,
    readonly timeoutMs: number,
    readonly output: string,
    report: BuildFailureReport = {},
  ) {
    super(
      `${report.step ?? 'docker build'} of ${image} ran past the time limit of ${formatDuration(timeoutMs)} and was stopped ` +
        `(buildTimeoutMs; setting build.timeoutSeconds or env CA_SANDBOX_BUILD_TIMEOUT, in seconds)` +
        trustClause(output, report),
      { hint: logHint(report) },
    );
    this.details = report.details ?? [];
    if (report.logFile) this.logFile = report.logFile;
  }
}

/**
 * The install wrote more than the deps image cap: the build was stopped (or its image removed)
 * and nothing it left stays behind.
 */
export class DepsImageTooLargeError extends CaSandboxError {
  readonly kind = 'failure';
  readonly code = 'DEPS_IMAGE_TOO_LARGE';
  constructor(
    readonly image: string,
    readonly limitBytes: number,
    readonly seenBytes: number,
    readonly during: 'install' | 'image',
  ) {
    super(
      `the dependency install of ${image} wrote ${formatSize(seenBytes)}${during === 'install' ? ' and counting' : ''}, ` +
        `over the deps image cap of ${formatSize(limitBytes)}: the build was ${during === 'install' ? 'stopped' : 'refused'} and its image removed ` +
        `(raise the cap with --max-deps-size, option maxDepsSize or setting build.maxDepsSize / env CA_SANDBOX_MAX_DEPS_SIZE)`,
    );
  }
}

/**
 * A node install left /deps or /deps/src as something else than a directory of its own (a link):
 * the image would name a host path as a repo view's lower, so it is refused and removed.
 */
export class DepsLayerError extends CaSandboxError {
  readonly kind = 'failure';
  readonly code = 'DEPS_LAYER';
  constructor(
    readonly image: string,
    readonly detail: string,
  ) {
    super(`the dependency install of ${image} left ${detail}: the build was refused and its image removed`);
  }
}

/** A failed build's hint: where its full log is kept. */
function logHint(report: BuildFailureReport): string | undefined {
  return report.logFile ? `full install log: ${report.logFile}` : undefined;
}

function formatDuration(ms: number): string {
  if (ms % 60_000 === 0) return `${ms / 60_000} min`;
  if (ms % 1000 === 0) return `${ms / 1000} s`;
  return `${ms} ms`;
}

/** How a SIGKILL (the cgroup OOM killer) shows in npm, pip, go or the builder's own output. */
const KILLED = /\bSIGKILL\b|non-zero code: 137\b|\bKilled\b|out of memory/i;

function lastLine(text: string): string {
  const lines = text.trim().split('\n');
  return (lines[lines.length - 1] ?? '').slice(0, 500);
}

/**
 * The install step saw itself less confined than it is started (its first line, before any of the
 * repo's code ran: @ca-sandbox/docker installConfinementRows): the image is not kept.
 */
export class InstallConfinementError extends CaSandboxError {
  readonly kind = 'failure';
  readonly code = 'INSTALL_CONFINEMENT';
  constructor(
    readonly image: string,
    readonly failures: ConfinementRow[],
  ) {
    super(`the install step for ${image} was not confined as it must be: ${failedChecksText(failures)}`, {
      hint: 'the engine or its builder ignored a limit or the no-new-privileges setting: nothing of this build is kept',
    });
  }
}
