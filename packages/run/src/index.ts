export {
  ContainerNameInUseError,
  GatewayImageMissingError,
  GatewayStartError,
  InvalidRunOptionsError,
  IsolationViolationError,
  RuntimeUnavailableError,
  UnsupportedCombinationError,
} from './errors.js';
export {
  DEFAULT_GATEWAY_IMAGE,
  type EgressGateway,
  type GatewayOptions,
  gatewayImage,
  readGatewayLog,
  reconfigureGateway,
  startGateway,
  stopGateway,
} from './gateway.js';
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
  PROXY_ENV_NAMES,
} from './run-args.js';
export { type RunHooks, type RunningContainer, runContainer, verifyContainer } from './run-container.js';
