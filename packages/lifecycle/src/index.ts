export { type CpOutOptions, type CpOutResult, cpOut, cpOutToStream, resolveBoxPath } from './cp-out.js';
export {
  type CreateHooks,
  type CreateOptions,
  type CreatePhase,
  createSandbox,
  type PhaseEvent,
} from './create.js';
export {
  CloneFailedError,
  CpOutDestinationError,
  CpOutLimitError,
  CpOutSourceError,
  CpOutStreamError,
  CreateAbortedError,
  CreateCleanupError,
  HelperImageMissingError,
  InvalidOptionsError,
  InvalidSandboxNameError,
  InvalidSourceError,
  LimitError,
  SandboxExistsError,
  SandboxNotFoundError,
  SourceTooLargeError,
  UnsupportedHostError,
} from './errors.js';
export {
  DEFAULT_EXEC_MAX_BYTES,
  EXEC_TIMEOUT_EXIT_CODE,
  type ExecOptions,
  type ExecResult,
  execInSandbox,
} from './exec.js';
export { GIT_MODES, type GitMode } from './git-modes.js';
export { BOX_LIMITS, type BoxLimits, checkLimits, fitToEngine } from './limits.js';
export { listSandboxes, verifySandbox } from './list.js';
export { resolveCreateOptions } from './options.js';
export type { SandboxRecord } from './record.js';
export { openShell } from './shell.js';
export { type ParsedSource, parseSource, validateSandboxName } from './source.js';
export { destroySandbox, prune, type TeardownFailure, type TeardownResult } from './teardown.js';
