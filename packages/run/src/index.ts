export {
  ContainerNameInUseError,
  GatewayImageMissingError,
  GatewayStartError,
  InvalidRunOptionsError,
  IsolationViolationError,
  RuntimeUnavailableError,
  StartCancelledError,
  UnsupportedCombinationError,
} from './errors.js';
export {
  DEFAULT_GATEWAY_IMAGE,
  type EgressGateway,
  GATEWAY_LOG_CUT,
  GATEWAY_LOG_MAX_BYTES,
  type GatewayOptions,
  gatewayConfigMatches,
  gatewayHostPins,
  gatewayImage,
  gatewayLogEntries,
  probeUpstreamTrust,
  readGatewayCa,
  readGatewayLog,
  reconfigureGateway,
  restoreCredentials,
  startGateway,
  stopGateway,
  type UpstreamTrust,
} from './gateway.js';
export {
  HEARTBEAT_FILE,
  HEARTBEAT_INTERVAL_MS,
  HEARTBEAT_STALE_SECONDS,
  heartbeatWatch,
  keepAlive,
} from './heartbeat.js';
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
  buildContainerConfig,
  buildRunArgs,
  containerEnv,
  containerLabels,
  PROXY_ENV_NAMES,
  runArgsOf,
} from './run-args.js';
export { type RunHooks, type RunningContainer, runContainer, verifyContainer } from './run-container.js';
