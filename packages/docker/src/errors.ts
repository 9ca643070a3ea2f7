import { CaSandboxError } from './error-base.js';

/** Docker is missing or its daemon does not answer: a missing prerequisite (exit 3). */
export class DockerUnavailableError extends CaSandboxError {
  readonly kind = 'prerequisite';
  readonly code = 'DOCKER_UNAVAILABLE';
  declare readonly hint: string;
  constructor(detail: string, hint = DOCKER_HINT) {
    super(`Docker is not available: ${detail}`, { hint });
  }
}

/** A docker command ran and failed; carries docker's own exit code and stderr. */
export class DockerCommandError extends CaSandboxError {
  readonly kind = 'failure';
  readonly code = 'DOCKER_FAILED';
  constructor(
    readonly argv: readonly string[],
    readonly exitCode: number,
    readonly stderr: string,
  ) {
    super(`docker ${argv[0] ?? ''} failed with exit code ${exitCode}: ${firstLine(stderr) || 'no output'}`);
  }
}

/** docker's answer did not have the shape we rely on (an old engine, or tampering). */
export class DockerResponseError extends CaSandboxError {
  readonly kind = 'failure';
  readonly code = 'DOCKER_RESPONSE';
}

export const DOCKER_HINT =
  'install Docker and start the daemon (on Debian: apt-get install docker.io && dockerd &), or run scripts/install-host.sh; check with `docker info`';

function firstLine(text: string): string {
  return text.trim().split('\n')[0]?.slice(0, 500) ?? '';
}
