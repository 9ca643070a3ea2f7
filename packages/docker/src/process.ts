// The light entry (`@ca-sandbox/docker/process`): spawning and labels without the zod schemas,
// for hot paths such as `ca-sandbox exec` whose start-up time is measured.

export * from './contracts.js';
export {
  DEFAULT_ENGINE_SOCKET,
  dockerConfigDir,
  type EngineEndpoint,
  type EngineTransport,
  engineEndpoint,
  parseEngineHost,
  resolveEndpoint,
} from './endpoint.js';
export { containerLabels, type LabeledObject, listLabeled, removeObject } from './engine-api.js';
export {
  collectExec,
  createExec,
  type ExecChild,
  type ExecEnd,
  type ExecOutcome,
  type ExecOutput,
  type ExecSpec,
  inspectExec,
  internalExecSpec,
  startExec,
} from './engine-exec.js';
export {
  DOCKER_HINT,
  DockerCommandError,
  DockerEngineError,
  DockerNotFoundError,
  DockerResponseError,
  DockerUnavailableError,
} from './errors.js';
export {
  type DockerChild,
  type DockerProcessResult,
  type DockerResult,
  type DockerRunOptions,
  type DockerSpawnOptions,
  dockerEnv,
  dockerSpawnError,
  isDaemonUnreachable,
  setDockerTracer,
} from './exec-docker.js';
export {
  ENV_BIN,
  type InternalExecOptions,
  internalExecArgs,
  SH_BIN,
  SLEEP_BIN,
  SYSTEM_PATH,
} from './internal-exec.js';
export * from './labels.js';
export { DOCKER_CLI_PROXY_VARIABLES, isProxyVariable } from './proxy.js';
export {
  formatSize,
  parseSize,
  SIZE_SYNTAX,
} from './size.js';
