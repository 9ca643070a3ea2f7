import {
  CPU_PERIOD,
  cpuQuota,
  DOCKER_CLI_PROXY_VARIABLES,
  processUlimits,
  ulimitFlags,
} from '@ca-sandbox/docker';
/** Set empty on every build: the CLI would fill them from config.json (see @ca-sandbox/docker). */
export const PROXY_BUILD_ARGS = DOCKER_CLI_PROXY_VARIABLES;

/** The CFS period of a build's CPU quota (one home with the box's: @ca-sandbox/docker hardening). */
export { CPU_PERIOD };

/** Resource limits of the build containers (the install step runs the repo's scripts). */
export interface BuildLimits {
  /** docker size (`2g`); memory+swap is the same value, so the build gets no swap. */
  memory: string;
  cpus: number;
  /** RLIMIT_NPROC of the install user: counted per uid across the host, not per container. */
  processes: number;
  /** RLIMIT_FSIZE in bytes (docker passes `--ulimit fsize` to setrlimit unchanged). */
  fileSize: number;
}

export interface BuildArgvInput {
  /** The tag; none for a pre-install build (named by its id: the install's commit gets the tag). */
  image?: string;
  /**
   * Where the docker client writes the built image's id: a build without a tag is named by it,
   * never by its output (which the repo's install writes into).
   */
  iidFile?: string;
  /** `none`, `bridge`, or the sandbox's internal egress network. */
  network: string;
  /** The egress gateway: set as the install's proxy (the predefined proxy build args). */
  proxyUrl?: string;
  /**
   * `--label`s: the legacy builder commits one LABEL step per flag (a container and a commit
   * each), so a build that can write its labels into its Dockerfile does.
   */
  labels?: Record<string, string>;
  dockerfile: string;
  context: string;
  limits: BuildLimits;
}

/** HTTP(S) proxy variables point at the gateway; FTP, ALL (socks) and NO_PROXY stay empty. */
function proxyValue(name: string, proxyUrl: string | undefined): string {
  return proxyUrl && /^(https?_proxy)$/i.test(name) ? proxyUrl : '';
}

/** The `docker build` argv (legacy builder): limits, blanked proxies, labels, then the context. */
export function buildArgv(input: BuildArgvInput): string[] {
  const { limits } = input;
  return [
    'build',
    '--network',
    input.network,
    // No step of ours is ever a cache hit (each Dockerfile begins with its build's own id), and
    // the legacy builder's cache probe reads every child of the parent image: one removed meanwhile
    // (another build's failure, a test's clean-up) failed this build with "unable to find image".
    '--no-cache',
    '--rm',
    '--force-rm',
    '--memory',
    limits.memory,
    '--memory-swap',
    limits.memory,
    '--cpu-period',
    String(CPU_PERIOD),
    '--cpu-quota',
    String(cpuQuota(limits.cpus)),
    // No core dumps, a file size cap and (per uid) a process cap: what the install step checks
    // it got from the inside (installConfinementRows).
    ...ulimitFlags(processUlimits({ fileSize: limits.fileSize, processes: limits.processes })),
    ...PROXY_BUILD_ARGS.flatMap((name) => ['--build-arg', `${name}=${proxyValue(name, input.proxyUrl)}`]),
    ...(input.image ? ['--tag', input.image] : []),
    ...(input.iidFile ? ['--iidfile', input.iidFile] : []),
    ...Object.entries(input.labels ?? {}).flatMap(([key, value]) => ['--label', `${key}=${value}`]),
    '--file',
    input.dockerfile,
    input.context,
  ];
}
