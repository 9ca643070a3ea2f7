import {
  type ContainerInspect,
  dockerInfo,
  engine,
  imageViewFacts,
  inspectContainer,
  isNameConflict,
  LABEL_ALLOWED_ENV,
  LABEL_DNS,
  LABEL_EXTRA_NETWORKS,
  LABEL_ID,
  LABEL_NETWORK,
  LABEL_ROLE,
  LABEL_RUNTIME,
  repoViewFacts,
  runtimeIsNetworkless,
} from '@ca-sandbox/docker';
import {
  ContainerNameInUseError,
  InvalidRunOptionsError,
  IsolationViolationError,
  RuntimeUnavailableError,
  StartCancelledError,
  UnsupportedCombinationError,
} from './errors.js';
import { type IsolationReport, verifyDaemon, verifyIsolation } from './isolation.js';
import { type RunOptions, resolveRunOptions } from './options.js';
import { buildContainerConfig, keepsLog } from './run-args.js';

export interface RunningContainer {
  id: string;
  name: string;
  inspect: ContainerInspect;
  report: IsolationReport;
}

async function assertRuntime(options: RunOptions): Promise<void> {
  if (options.runtime === 'runc') return;
  const info = await dockerInfo();
  const { runtimes } = info;
  if (!runtimes.includes(options.runtime)) throw new RuntimeUnavailableError(options.runtime, runtimes);
  if (options.network !== 'none' && runtimeIsNetworkless(info, options.runtime)) {
    throw new UnsupportedCombinationError(
      `runtime ${options.runtime} is registered here for network-less boxes only (--network=none): a container of it has a loopback only; use the offline or clone-then-cut policy, or runtime runc`,
    );
  }
}

/**
 * The daemon-wide part of the gate, checked before anything starts: under a daemon with seccomp
 * off, no container of ours would be confined, so none is started.
 */
async function assertDaemonConfines(options: RunOptions): Promise<string[]> {
  const { securityOptions } = await dockerInfo();
  const failed = verifyDaemon(securityOptions).filter((check) => !check.pass);
  if (failed.length) throw new IsolationViolationError(options.name, failed);
  return securityOptions;
}

async function removeQuietly(ref: string): Promise<void> {
  await engine.container.remove(ref, { force: true }).catch(() => false);
}

export interface RunHooks {
  /** The container started: the gate (inspect, then every isolation check) starts now. */
  onStarted?(containerId: string): void;
  /**
   * Asked once the container is created, before it starts: false (or a throw) removes it
   * unstarted (StartCancelledError). For a container made before its volumes may be mounted: a
   * box created beside the clone and started once the checkout is written.
   */
  beforeStart?(): Promise<boolean>;
}

/**
 * Starts a sandbox container (box, helper or gateway) from the hardened create body over the
 * Engine API (create, then start), then reads it back with inspect and removes it unless every
 * isolation check passes.
 *
 * @throws InvalidRunOptionsError, RuntimeUnavailableError, ContainerNameInUseError,
 *   IsolationViolationError (the container is already removed), DockerCommandError
 */
export async function runContainer(input: unknown, hooks: RunHooks = {}): Promise<RunningContainer> {
  const options = resolveRunOptions(input);
  await assertRuntime(options);
  const daemonSecurityOptions = await assertDaemonConfines(options);
  const pidOf = await sharedPidBox(options);
  const config = buildContainerConfig(options);
  let id: string;
  try {
    id = hooks.beforeStart
      ? await createThenStart(options.name, config, hooks.beforeStart)
      : await engine.container.run(options.name, config);
  } catch (error) {
    // The name is someone else's container: never remove it.
    if (isNameConflict(error)) throw new ContainerNameInUseError(options.name);
    // The verb removes what it created when the start fails; a create whose answer was lost
    // (a timeout) may still have made it: never leave it.
    await removeQuietly(options.name);
    throw error;
  }
  try {
    hooks.onStarted?.(id);
    const inspect = await inspectContainer(id);
    const [imageView, repoView] = await Promise.all([imageViewFacts(inspect), repoViewFacts(inspect)]);
    const report = verifyIsolation(inspect, {
      network: options.network,
      runtime: options.runtime,
      sandboxId: options.sandboxId,
      allowedEnv: Object.keys(options.env),
      daemonSecurityOptions,
      dns: options.dns,
      requireRepoVolume: options.role !== 'gateway',
      forbidVolumes: options.role === 'gateway',
      extraNetworks: options.extraNetworks,
      keepsLog: keepsLog(options.role),
      ...(pidOf ? { pidOf } : {}),
      ...(imageView ? { imageView } : {}),
      ...(repoView ? { repoView } : {}),
    });
    if (!report.ok) {
      throw new IsolationViolationError(
        options.name,
        report.checks.filter((check) => !check.pass),
      );
    }
    return { id, name: options.name, inspect, report };
  } catch (error) {
    await removeQuietly(id);
    throw error;
  }
}

/** engine.container.run with a wait between the create and the start (RunHooks.beforeStart). */
async function createThenStart(
  name: string,
  config: ReturnType<typeof buildContainerConfig>,
  beforeStart: () => Promise<boolean>,
): Promise<string> {
  const id = await engine.container.create(name, config);
  if (!(await beforeStart().catch(() => false))) {
    await removeQuietly(id);
    throw new StartCancelledError(name);
  }
  await engine.container.start(id);
  return id;
}

/**
 * The id of the box a helper joins the PID namespace of (options.pidOf), once it is seen to be
 * this sandbox's box: the gate then holds the helper's PidMode to exactly that container.
 */
async function sharedPidBox(options: RunOptions): Promise<string | undefined> {
  if (options.pidOf === undefined) return undefined;
  const box = await engine.container.find(options.pidOf);
  if (!box || box.Config.Labels[LABEL_ID] !== options.sandboxId || box.Config.Labels[LABEL_ROLE] !== 'box')
    throw new InvalidRunOptionsError(`pidOf ${options.pidOf} is not the box of sandbox ${options.sandboxId}`);
  return box.Id;
}

/**
 * Re-runs the isolation gate on a running container; the expected network, runtime and allowed
 * env names come from the labels runContainer set (a box cannot change its own labels), the daemon
 * rows from `docker info` (cached for the process).
 */
export async function verifyContainer(ref: string, inspected?: ContainerInspect): Promise<IsolationReport> {
  // A caller that already read the container passes its inspect: one engine call, not two.
  const inspect = inspected ?? (await inspectContainer(ref));
  const labels = inspect.Config.Labels;
  const [{ securityOptions }, imageView, repoView] = await Promise.all([
    dockerInfo(),
    imageViewFacts(inspect),
    repoViewFacts(inspect),
  ]);
  return verifyIsolation(inspect, {
    network: labels[LABEL_NETWORK] ?? '(missing label)',
    runtime: labels[LABEL_RUNTIME] ?? '(missing label)',
    requireRepoVolume: labels[LABEL_ROLE] !== 'helper' && labels[LABEL_ROLE] !== 'gateway',
    forbidVolumes: labels[LABEL_ROLE] === 'gateway',
    keepsLog: labels[LABEL_ROLE] === 'gateway',
    extraNetworks: (labels[LABEL_EXTRA_NETWORKS] ?? '').split(',').filter(Boolean),
    allowedEnv: (labels[LABEL_ALLOWED_ENV] ?? '').split(',').filter(Boolean),
    daemonSecurityOptions: securityOptions,
    // A box labeled blackhole must still have it; an unlabeled box (older) is not held to it.
    dns: labels[LABEL_DNS] === 'blackhole' ? 'blackhole' : 'default',
    ...(imageView ? { imageView } : {}),
    ...(repoView ? { repoView } : {}),
  });
}
