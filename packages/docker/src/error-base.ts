// The one error base of ca-sandbox. No imports: the contracts entry (the CLI's start-up path and
// its exec fast path) carries it.

/**
 * What an error means to the person who ran the command, and so the CLI's exit code: usage → 2,
 * prerequisite → 3 (with a `hint`), failure → 1.
 */
export type ErrorKind = 'usage' | 'prerequisite' | 'failure';

export const ERROR_KINDS: readonly ErrorKind[] = ['usage', 'prerequisite', 'failure'];

/**
 * Marks our errors across copies of this module: the CLI's exec fast path bundles the light entry
 * and loads the full barrel as a separate bundle, so one error may come from either copy of the
 * class and `instanceof` alone would miss it.
 */
const BRAND = Symbol.for('ca-sandbox.error');

/**
 * Every error class of every package derives from this and states only what is its own: a stable
 * `code` (UPPER_SNAKE), its `kind`, its message and, for a prerequisite, the `hint` that says how
 * to get it. `name` is the class's own name.
 */
export abstract class CaSandboxError extends Error {
  abstract readonly code: string;
  abstract readonly kind: ErrorKind;
  /** What to do about it (every prerequisite error has one). */
  declare readonly hint?: string;

  constructor(message?: string, options?: { hint?: string | undefined; cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    if (options?.hint) (this as { hint?: string }).hint = options.hint;
  }
}
Object.defineProperty(CaSandboxError.prototype, BRAND, { value: true });

/** An error of ours (from any copy of this module), with a usable `code` and `kind`. */
export function isCaSandboxError(value: unknown): value is CaSandboxError {
  if (value instanceof CaSandboxError) return true;
  if (typeof value !== 'object' || value === null) return false;
  const fields = value as { [BRAND]?: unknown; code?: unknown; kind?: unknown };
  return (
    fields[BRAND] === true &&
    typeof fields.code === 'string' &&
    (ERROR_KINDS as readonly unknown[]).includes(fields.kind)
  );
}

/**
 * A rule of our own code broken (a value our code made that another part of it refuses): a bug,
 * never the user's input or the repo's. Coded like every other error (exit 1), so that the CLI
 * reports it in one line instead of a raw Error.
 */
export class InvariantError extends CaSandboxError {
  readonly code = 'INVARIANT_VIOLATED';
  readonly kind = 'failure';
}
