export { GIT_MODES, type GitMode } from '@ca-sandbox/docker';
export { DEFAULT_GATEWAY_IMAGE } from '@ca-sandbox/run';
export { type CpOutOptions, type CpOutResult, cpOut, cpOutToStream, resolveBoxPath } from './cp-out.js';
export {
  type CreateHooks,
  type CreateOptions,
  type CreatePhase,
  createSandbox,
  type PhaseEvent,
} from './create/index.js';
export { type EgressSummaryRow, LABEL_EGRESS } from './egress.js';
export {
  CheckoutTooLargeError,
  CloneFailedError,
  CommandNotFoundError,
  CpOutDestinationError,
  CpOutLimitError,
  CpOutSourceError,
  CpOutStreamError,
  CreateAbortedError,
  CreateCleanupError,
  ExecInterruptedError,
  ExecStartError,
  HelperImageMissingError,
  InvalidOptionsError,
  InvalidSandboxIdError,
  InvalidSourceError,
  LimitError,
  NotABoxError,
  SandboxExistsError,
  SandboxNotFoundError,
  SandboxNotRunningError,
  SandboxStartRefusedError,
  ShellNeedsTerminalError,
  SourceChangedError,
  SourceTooLargeError,
  UnsupportedHostError,
} from './errors.js';
export {
  checkExecEnv,
  DEFAULT_EXEC_MAX_BYTES,
  EXEC_TIMEOUT_EXIT_CODE,
  type ExecOptions,
  type ExecResult,
  type ExecSink,
  execInSandbox,
  resolveExecWorkdir,
  type StreamExecOptions,
  type StreamExecResult,
  streamExecInSandbox,
} from './exec.js';
export { type CacheImage, type ImageCacheListing, listImageCache } from './image-cache.js';
export { keepReport, lastKeptReport } from './kept-report.js';
export { BOX_LIMITS, type BoxLimits, checkLimits, fitToEngine } from './limits.js';
export { egressLog, listSandboxes, verifySandbox } from './list.js';
export { resolveCreateOptions } from './options.js';
export { LABEL_EGRESS_ALLOW, LABEL_WITH_CLAUDE, type SandboxRecord } from './record.js';
export { REPORT_VERSION, type SandboxReport, SandboxReportSchema, sandboxReport } from './report.js';
export { chooseRuntime, RUNSC_NETWORKLESS, type RuntimeChoice } from './runtime-choice.js';
export { type OpenShellOptions, openShell, type ShellSession } from './shell.js';
export { type ParsedSource, parseSource, validateSandboxName } from './source.js';
export { type StartResult, type StopResult, startSandbox, stopSandbox } from './start-stop.js';
export { destroySandbox, prune, type TeardownFailure, type TeardownResult } from './teardown.js';
export { TerminalFilter, type TerminalPolicy, terminalFilterStream } from './terminal-filter.js';
