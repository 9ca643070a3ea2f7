/** Mirrors ErrorKind of @ca-sandbox/docker (kept local so that start-up does not load that package). */
export type ErrorKind = 'usage' | 'prerequisite' | 'failure';

/** Bad input or usage of the CLI itself (exit 2). */
export class UsageError extends Error {
  override name = 'UsageError';
  readonly kind = 'usage' as const;
  constructor(
    message: string,
    readonly code = 'USAGE',
    readonly hint?: string,
  ) {
    super(message);
  }
}

/** A missing tool or service the command needs (exit 3). */
export class PrerequisiteError extends Error {
  override name = 'PrerequisiteError';
  readonly kind = 'prerequisite' as const;
  constructor(
    message: string,
    readonly hint: string,
    readonly code = 'PREREQUISITE_MISSING',
  ) {
    super(message);
  }
}

/** The operation ran and failed (exit 1). */
export class OperationFailedError extends Error {
  override name = 'OperationFailedError';
  readonly kind = 'failure' as const;
  constructor(
    message: string,
    readonly code = 'FAILED',
  ) {
    super(message);
  }
}

/** Teardown finished but objects remain; they are named on stderr (exit 1). */
export class LeftoversError extends Error {
  override name = 'LeftoversError';
  readonly kind = 'failure' as const;
  readonly code = 'TEARDOWN_INCOMPLETE';
  constructor(readonly leftovers: string[]) {
    super(`teardown left ${leftovers.length} object(s) behind: ${leftovers.join(', ')}`);
  }
}
