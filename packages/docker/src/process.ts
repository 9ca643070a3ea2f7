// The light entry (`@ca-sandbox/docker/process`): spawning and labels without the zod schemas,
// for hot paths such as `ca-sandbox exec` whose start-up time is measured.

export * from './contracts.js';
export { containerLabels } from './engine-api.js';
export { DOCKER_HINT, DockerCommandError, DockerResponseError, DockerUnavailableError } from './errors.js';
export {
  type DockerChild,
  type DockerProcessResult,
  type DockerResult,
  type DockerRunOptions,
  type DockerSpawnOptions,
  docker,
  dockerEnv,
  dockerSpawnError,
  isDaemonUnreachable,
  setDockerTracer,
  spawnDocker,
} from './exec-docker.js';
export {
  ENV_BIN,
  type InternalExecOptions,
  internalExecArgs,
  SH_BIN,
  SYSTEM_PATH,
} from './internal-exec.js';
export * from './labels.js';
export { DOCKER_CLI_PROXY_VARIABLES } from './proxy.js';
export {
  DOCKER_MIN_CPUS,
  DOCKER_MIN_MEMORY_BYTES,
  formatSize,
  parseSize,
  SIZE_SYNTAX,
} from './size.js';
