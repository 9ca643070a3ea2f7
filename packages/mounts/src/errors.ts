import { CaSandboxError } from '@ca-sandbox/docker/contracts';
/** A mount that would expose the host: a bind in any spelling, the docker socket, driver options. */
export class BindMountRejectedError extends CaSandboxError {
  readonly code = 'BIND_MOUNT_REJECTED';
  readonly kind = 'usage';
  constructor(reason: string) {
    super(
      `mount rejected: ${reason} (only named volumes and tmpfs are allowed; the host filesystem is never mounted)`,
    );
  }
}

/** A mount spec that is malformed without being a bind (bad target, bad size). */
export class InvalidMountError extends CaSandboxError {
  readonly code = 'INVALID_MOUNT';
  readonly kind = 'usage';
  constructor(reason: string) {
    super(`invalid mount: ${reason}`);
  }
}
