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

/**
 * The engine refused an Engine API call: its HTTP status and its own message. A DockerCommandError
 * (argv = the verb's words, exitCode 1), so callers that handled a failed docker command keep
 * handling it.
 */
export class DockerEngineError extends DockerCommandError {
  constructor(
    readonly verb: string,
    readonly status: number,
    readonly engineMessage: string,
  ) {
    super(verb.split(' '), 1, engineMessage);
    this.message = `docker ${verb} failed: ${firstLine(engineMessage) || `the engine answered ${status}`}`;
  }
}

/** The engine has no such object (HTTP 404): a container, volume, network, image or exec. */
export class DockerNotFoundError extends DockerEngineError {
  constructor(verb: string, engineMessage: string) {
    super(verb, 404, engineMessage);
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

/** A volume of a sandbox's image view (image-view.ts) has the name but is not that sandbox's. */
export class ImageViewError extends CaSandboxError {
  readonly kind = 'failure';
  readonly code = 'IMAGE_VIEW';
}
