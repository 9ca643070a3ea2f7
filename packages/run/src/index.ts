export {
  ContainerNameInUseError,
  InvalidRunOptionsError,
  IsolationViolationError,
  RuntimeUnavailableError,
  UnsupportedCombinationError,
} from './errors.js';
export {
  type IsolationCheck,
  type IsolationExpectations,
  type IsolationReport,
  verifyDaemon,
  verifyIsolation,
} from './isolation.js';
export {
  type RunOptions,
  type RunOptionsInput,
  RunOptionsSchema,
  resolveRunOptions,
} from './options.js';
export {
  BLACKHOLE_DNS,
  buildRunArgs,
  containerEnv,
  containerLabels,
  KEEP_ALIVE,
  PROXY_ENV_NAMES,
  REPO_DIR,
  SANDBOX_USER,
} from './run-args.js';
export { type RunHooks, type RunningContainer, runContainer, verifyContainer } from './run-container.js';
