import { CaSandboxError, failedChecksText } from '@ca-sandbox/docker/contracts';
import type { IsolationCheck } from './isolation-check.js';

/** runContainer was given options it does not accept (unknown keys, bad values). */
export class InvalidRunOptionsError extends CaSandboxError {
  readonly code = 'INVALID_RUN_OPTIONS';
  readonly kind = 'usage';
  constructor(detail: string) {
    super(`invalid sandbox options: ${detail}`);
  }
}

/** The requested container runtime (e.g. gVisor's runsc) is not registered with the engine. */
export class RuntimeUnavailableError extends CaSandboxError {
  readonly code = 'RUNTIME_UNAVAILABLE';
  readonly kind = 'prerequisite';
  declare readonly hint: string;
  constructor(runtime: string, available: string[]) {
    super(
      `runtime '${runtime}' is not registered with docker (available: ${available.join(', ') || 'none'})`,
      {
        hint:
          runtime === 'runsc'
            ? 'apt-get install runsc, register it in /etc/docker/daemon.json ("runtimes": {"runsc": {"path": "/usr/bin/runsc", "runtimeArgs": ["--network=none"]}}) and restart dockerd; scripts/install-host.sh does this'
            : 'check `docker info` for the registered runtimes',
      },
    );
  }
}

/** The combination asked for cannot be isolated as promised (e.g. runsc with a network). */
export class UnsupportedCombinationError extends CaSandboxError {
  readonly code = 'UNSUPPORTED_COMBINATION';
  readonly kind = 'usage';
}

/** RunHooks.beforeStart said no: the container was created, then removed, never started. */
export class StartCancelledError extends CaSandboxError {
  readonly code = 'START_CANCELLED';
  readonly kind = 'failure';
  constructor(name: string) {
    super(`container '${name}' was not started: what it waited for did not come`);
  }
}

/** A container with this name exists already. */
export class ContainerNameInUseError extends CaSandboxError {
  readonly code = 'NAME_IN_USE';
  readonly kind = 'usage';
  constructor(name: string) {
    super(`a container named '${name}' already exists: choose another --name or destroy it first`);
  }
}

/** The started container broke an isolation invariant; it was removed before this was thrown. */
export class IsolationViolationError extends CaSandboxError {
  readonly code = 'ISOLATION_VIOLATION';
  readonly kind = 'failure';
  constructor(
    readonly container: string,
    readonly failures: IsolationCheck[],
  ) {
    super(`isolation check failed for ${container}: ${failedChecksText(failures)}`);
  }
}

/** The egress gateway (squid) did not come up; its container and networks are left for cleanup. */
export class GatewayStartError extends CaSandboxError {
  readonly code = 'GATEWAY_START_FAILED';
  readonly kind = 'failure';
  constructor(container: string, why: string) {
    super(`the egress gateway ${container} did not start: ${why}`);
  }
}

/** The gateway image is not on this engine (no registry: scripts/seed-images.sh builds it). */
export class GatewayImageMissingError extends CaSandboxError {
  readonly code = 'GATEWAY_IMAGE_MISSING';
  readonly kind = 'prerequisite';
  override readonly hint = 'bash scripts/seed-images.sh builds ca-sbx-base:gateway (Debian squid)';
  constructor(image: string) {
    super(`the egress gateway image ${image} is missing`);
  }
}
