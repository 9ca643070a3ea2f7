// The CLI's own errors, on the one base (the contracts entry: no cost at start-up).
import { CaSandboxError } from '@ca-sandbox/docker/contracts';

/** Bad input or usage of the CLI itself (exit 2). */
export class UsageError extends CaSandboxError {
  readonly kind = 'usage';
  constructor(
    message: string,
    readonly code = 'USAGE',
    hint?: string,
  ) {
    super(message, { hint });
  }
}

/** A missing tool or service the command needs (exit 3). */
export class PrerequisiteError extends CaSandboxError {
  readonly kind = 'prerequisite';
  declare readonly hint: string;
  constructor(
    message: string,
    hint: string,
    readonly code = 'PREREQUISITE_MISSING',
  ) {
    super(message, { hint });
  }
}

/** The operation ran and failed (exit 1). */
export class OperationFailedError extends CaSandboxError {
  readonly kind = 'failure';
  constructor(
    message: string,
    readonly code = 'FAILED',
  ) {
    super(message);
  }
}

/** Teardown finished but objects remain; they are named on stderr (exit 1). */
export class LeftoversError extends CaSandboxError {
  readonly kind = 'failure';
  readonly code = 'TEARDOWN_INCOMPLETE';
  constructor(readonly leftovers: string[]) {
    super(`teardown left ${leftovers.length} object(s) behind: ${leftovers.join(', ')}`);
  }
}
