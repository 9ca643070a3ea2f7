import { randomBytes } from 'node:crypto';
import {
  linkDependencies,
  type PreparedImage,
  prepareImage,
  readExtraCa,
  resolveCaCertificates,
} from '@ca-sandbox/build';
import {
  DockerUnavailableError,
  docker,
  dockerInfo,
  imageExists,
  LABEL_CREATED,
  LABEL_POLICY,
  LABEL_REPO,
  type Runtime,
  SANDBOX_FILTER,
  sandboxIdFilter,
  sandboxLabels,
  sandboxNames,
} from '@ca-sandbox/docker';
import { buildVolumeCreateArgs } from '@ca-sandbox/mounts';
import {
  applyAllowlist,
  assertFirewallUsable,
  claudeInstallEgressRules,
  createSandboxNetwork,
  describeEgressRule,
  installEgressRules,
} from '@ca-sandbox/network';
import {
  ContainerNameInUseError,
  GatewayImageMissingError,
  gatewayImage,
  IsolationViolationError,
  RuntimeUnavailableError,
  runContainer,
} from '@ca-sandbox/run';
import { listIds } from './_utils.js';
import { measureCheckout } from './checkout-size.js';
import {
  buildLocalClonePlan,
  buildUrlClonePlan,
  type ClonePlan,
  GIT_ENV,
  installCloneCa,
  runCloneSteps,
  sendLocalTree,
} from './clone.js';
import {
  CreateEgress,
  cloneRules,
  describeSummaryRow,
  type EgressSummaryRow,
  LABEL_EGRESS,
  proxyEnv,
  relayEnv,
  relayInstallStep,
  summariseDecisions,
} from './egress.js';
import {
  CreateAbortedError,
  CreateCleanupError,
  HelperImageMissingError,
  SandboxExistsError,
} from './errors.js';
import { releaseFirewallRules } from './firewall-release.js';
import { HELPER_COMMAND, keepHelperAlive } from './helper.js';
import { type BoxLimits, fitToEngine } from './limits.js';
import { allowlistFirewallCheck } from './list.js';
import { generateSandboxId, type ResolvedCreateOptions, resolveCreateOptions } from './options.js';
import { scanDirectory } from './pack-local.js';
import {
  LABEL_ALLOW,
  LABEL_BLOCKED,
  LABEL_EGRESS_ALLOW,
  LABEL_INSTANCE,
  LABEL_SOURCE,
  LABEL_WITH_CLAUDE,
  recordFromInspect,
  type SandboxRecord,
  sandboxRecordLabels,
} from './record.js';
import { chooseRuntime } from './runtime-choice.js';
import { type ParsedSource, parseSource, redactUserinfo } from './source.js';

export type CreatePhase = 'preflight' | 'clone' | 'dephash' | 'build' | 'run' | 'verify';

export interface PhaseEvent {
  phase: CreatePhase;
  status: 'start' | 'done' | 'fail';
  detail?: string;
  elapsedMs?: number;
}

export interface CreateHooks {
  onPhase?(event: PhaseEvent): void;
  onLog?(line: string): void;
  /** A line the user must see whatever the verbosity (why the box does not get gVisor, say). */
  onNotice?(line: string): void;
  /** Abort (SIGINT/SIGTERM in the CLI): what was created so far is removed, then CreateAbortedError. */
  signal?: AbortSignal;
}

export type { CreateOptions } from './options.js';

/**
 * Clone → build → run → verify. The source is validated before anything runs; git runs only in a
 * hardened helper container; every object is labeled; any failure or abort removes everything
 * this call created (found by a per-call instance label) before the error is thrown.
 */
export async function createSandbox(
  options: import('./options.js').CreateOptions,
  hooks: CreateHooks = {},
): Promise<SandboxRecord> {
  const resolved = resolveCreateOptions(options);
  const source = await parseSource(resolved.source);
  const id = resolved.id || generateSandboxId(source.repoName);
  const run = new CreateRun(id, resolved, source, hooks);
  try {
    return await run.execute();
  } catch (error) {
    run.failCurrent(error);
    await run.egress.settled();
    run.egress.stopKeepAlive();
    const leftovers = await run.cleanup();
    const failure = hooks.signal?.aborted ? new CreateAbortedError() : error;
    if (leftovers.length > 0) throw new CreateCleanupError(id, failure, leftovers);
    throw failure;
  }
}

/**
 * Removes the objects labeled with one create's `instance`, then re-lists. The id's firewall rules
 * go only when this create applied them (`firewall`) and no container or network of the id is left:
 * a box whose `docker rm` failed still runs, and without its rules it would have open egress (and a
 * create refused as a duplicate must never strip the existing sandbox's rules).
 */
export async function cleanupCreate(id: string, instance: string, firewall: boolean): Promise<string[]> {
  const mine = [`label=${LABEL_INSTANCE}=${instance}`];
  const containers = await listIds('container', mine);
  if (containers.length)
    await docker(['rm', '--force', '--volumes', '--', ...containers], { allowFailure: true });
  const [volumes, networks] = await Promise.all([listIds('volume', mine), listIds('network', mine)]);
  if (volumes.length) await docker(['volume', 'rm', '--force', '--', ...volumes], { allowFailure: true });
  if (networks.length) await docker(['network', 'rm', '--', ...networks], { allowFailure: true });
  const format = ['--format', '{{.Name}}'];
  const containerFormat = ['--format', '{{.Names}}'];
  const flags = mine.flatMap((filter) => ['--filter', filter]);
  const names = async (argv: string[]) =>
    (await docker(argv)).stdout.split('\n').filter((line) => line.trim() !== '');
  const [leftContainers, leftVolumes, leftNetworks] = await Promise.all([
    names(['container', 'ls', '--all', ...flags, ...containerFormat]),
    names(['volume', 'ls', ...flags, ...format]),
    names(['network', 'ls', ...flags, ...format]),
  ]);
  const leftovers = [
    ...leftContainers.map((name) => `container:${name}`),
    ...leftVolumes.map((name) => `volume:${name}`),
    ...leftNetworks.map((name) => `network:${name}`),
  ];
  if (!firewall) return leftovers;
  // Any container or network of the id (not only this create's) keeps the rules.
  const { leftover } = await releaseFirewallRules(id);
  return leftover ? [...leftovers, leftover] : leftovers;
}

class CreateRun {
  private readonly instance = randomBytes(8).toString('hex');
  private readonly names;
  private readonly labels: Record<string, string>;
  private current?: { phase: CreatePhase; started: number };
  /** Set before applyAllowlist runs: only then may a cleanup touch the id's firewall rules. */
  private firewallTouched = false;
  /** Stops the helper's heartbeat (set once the helper runs). */
  private stopHeartbeat: () => void = () => {};
  /** The egress gateway of the clone and the install (started only when one of them needs it). */
  readonly egress: CreateEgress;
  /** The box's memory/cpus/pids, fitted to the engine in preflight. */
  private limits: BoxLimits;
  /** The box's runtime, chosen in preflight (chooseRuntime). */
  private runtime: Runtime;

  constructor(
    private readonly id: string,
    private readonly options: ResolvedCreateOptions,
    private readonly source: ParsedSource,
    private readonly hooks: CreateHooks,
  ) {
    this.names = sandboxNames(id);
    this.limits = { memory: options.memory, cpus: options.cpus, pids: options.pids };
    this.runtime = options.runtime;
    this.labels = sandboxLabels(id, {
      [LABEL_REPO]: source.repoName,
      [LABEL_POLICY]: options.policy,
      [LABEL_CREATED]: new Date().toISOString(),
      [LABEL_SOURCE]: source.display,
      [LABEL_INSTANCE]: this.instance,
    });
    this.egress = new CreateEgress(id, this.labels, hooks.signal);
  }

  async execute(): Promise<SandboxRecord> {
    await this.phase('preflight', () => this.preflight());
    await this.phase('clone', () => this.clone());
    const prepared = await this.build();
    // The helper sits on the gateway's internal network: it goes first, then the gateway.
    await this.removeHelper();
    const egress = await this.settleEgress();
    // The gateway goes while the box starts: nothing of the box depends on it.
    const closing = this.boxUsesGateway() ? Promise.resolve() : this.egress.close();
    this.checkAborted();
    this.start('run');
    // 'run' ends when `docker run` returns and 'verify' is runContainer's gate (inspect + checks),
    // which removes a box failing any check before it is handed out.
    const [box] = await Promise.all([this.startBox(prepared, egress), closing]);
    this.done(`${box.report.checks.filter((check) => check.pass).length} isolation checks passed`);
    await this.linkNodeModules(box.name, prepared);
    return recordFromInspect(box.inspect);
  }

  private async preflight(): Promise<string> {
    const info = await dockerInfo();
    this.limits = fitToEngine(this.limits, this.options.chosen, info);
    if (this.options.runtime !== 'runc' && !info.runtimes.includes(this.options.runtime)) {
      throw new RuntimeUnavailableError(this.options.runtime, info.runtimes);
    }
    const choice = chooseRuntime(this.options, info);
    this.runtime = choice.runtime;
    if (choice.notice) this.notice(choice.notice);
    if (!(await imageExists(this.options.helperImage)))
      throw new HelperImageMissingError(this.options.helperImage);
    if (this.needsGateway() && !(await imageExists(gatewayImage())))
      throw new GatewayImageMissingError(gatewayImage());
    if (this.options.policy === 'allowlist' && this.options.allowVia === 'firewall')
      await assertFirewallUsable();
    const filters = [SANDBOX_FILTER, sandboxIdFilter(this.id)];
    const [containers, volumes] = await Promise.all([
      listIds('container', filters),
      listIds('volume', filters),
    ]);
    if (containers.length > 0 || volumes.length > 0) throw new SandboxExistsError(this.id);
    return `docker ${info.serverVersion}`;
  }

  private async clone(): Promise<string> {
    const limits = this.options.sourceLimits;
    const scan = this.source.kind === 'local' ? await scanDirectory(this.source.path, limits) : undefined;
    this.checkAborted();
    // An install will need the gateway: start it while the local tree is copied (a URL clone
    // starts it anyway, for itself).
    if (this.source.kind === 'local' && this.options.policy !== 'offline') this.egress.prestart();
    await docker(buildVolumeCreateArgs(this.names.volume, this.labels));
    await this.assertOwnVolume();
    this.checkAborted();
    // A URL clone reaches the repo's host through the gateway and nothing else (unless the caller
    // named a network of its own); a local source needs no network at all.
    const gateway =
      this.source.kind === 'url' && this.options.cloneNetwork === undefined
        ? await this.egress.open('clone', cloneRules(this.source))
        : undefined;
    let network = 'none';
    if (this.source.kind === 'url') network = gateway?.network ?? this.options.cloneNetwork ?? 'none';
    await runContainer({
      sandboxId: this.id,
      name: this.names.helper,
      image: this.options.helperImage,
      role: 'helper',
      volume: this.names.volume,
      network,
      tmpfsSize: '1g',
      labels: this.labels,
      // Bounded by a heartbeat: the helper (and a clone in it) dies when this create does.
      command: HELPER_COMMAND,
      ...(gateway ? { env: proxyEnv(gateway) } : {}),
    }).catch((error: unknown) => {
      if (error instanceof ContainerNameInUseError) throw new SandboxExistsError(this.id);
      throw error;
    });
    this.stopHeartbeat = keepHelperAlive(this.names.helper);
    this.checkAborted();
    const limit = this.options.cloneTimeoutSeconds;
    const signal = this.hooks.signal;
    if (this.source.kind === 'url') {
      // git:// and ssh read no proxy variable: they go through a CONNECT relay to the gateway.
      const relay = gateway && (this.source.scheme === 'git' || this.source.scheme === 'ssh');
      if (relay) await runCloneSteps(this.names.helper, [{ argv: relayInstallStep() }], limit, signal);
      const caFile = resolveCaCertificates();
      const caEnv = caFile ? await installCloneCa(this.names.helper, readExtraCa(caFile)) : {};
      // Internal commands start from an empty environment: the proxy is named on each step.
      const extraEnv = {
        ...caEnv,
        ...(gateway ? proxyEnv(gateway) : {}),
        ...(relay ? relayEnv(GIT_ENV.GIT_SSH_COMMAND ?? 'ssh') : {}),
      };
      await this.fetchMeasureCheckout(buildUrlClonePlan(this.source, this.options.ref, limit), extraEnv);
      await this.egress.collect();
      return this.source.display;
    }
    if (!scan) throw new Error('unreachable: local source without a scan');
    await sendLocalTree(this.names.helper, scan, this.hooks.signal);
    if (scan.gitRepo) await this.fetchMeasureCheckout(buildLocalClonePlan(this.options.ref, limit));
    this.log(`copied ${scan.entries.length} entries (${scan.bytes} bytes) from ${this.source.display}`);
    for (const skip of scan.skipped.slice(0, 20)) this.log(`skipped ${skip.path}: ${skip.reason}`);
    return scan.gitRepo
      ? `${this.source.display} (git clone --no-local)`
      : `${this.source.display} (plain copy)`;
  }

  /**
   * Fetch without a work tree, measure what the checkout would write against the source caps
   * (CheckoutTooLargeError before any file is written), then check out.
   */
  private async fetchMeasureCheckout(plan: ClonePlan, fetchEnv: Record<string, string> = {}): Promise<void> {
    const limit = this.options.cloneTimeoutSeconds;
    const signal = this.hooks.signal;
    const helper = this.names.helper;
    await runCloneSteps(helper, plan.fetch, limit, signal, fetchEnv);
    this.checkAborted();
    const size = await measureCheckout(helper, plan.revision, this.options.sourceLimits, limit, signal);
    this.checkAborted();
    const steps = size.empty
      ? plan.checkout.filter((step) => !step.argv.includes('checkout'))
      : plan.checkout;
    this.log(
      size.empty
        ? 'the repository is empty: nothing to check out'
        : `checkout: ${size.entries} entries, ${size.bytes} bytes of files`,
    );
    await runCloneSteps(helper, steps, limit, signal);
  }

  /** `docker volume create` is idempotent: make sure the volume is the one this call made. */
  private async assertOwnVolume(): Promise<void> {
    const { stdout } = await docker([
      'volume',
      'inspect',
      '--format',
      '{{json .Labels}}',
      '--',
      this.names.volume,
    ]);
    const labels = JSON.parse(stdout) as Record<string, string> | null;
    if (labels?.[LABEL_INSTANCE] !== this.instance) throw new SandboxExistsError(this.id);
  }

  private async build(): Promise<PreparedImage> {
    this.emit({ phase: 'dephash', status: 'start' });
    this.current = { phase: 'dephash', started: performance.now() };
    const prepared = await prepareImage({
      containerId: this.names.helper,
      repoName: this.source.repoName,
      // The cache key holds the source's identity: another source with the same name and
      // manifests never gets this source's deps image (nor this one theirs).
      source: this.source.identity,
      sourceDisplay: redactUserinfo(this.source.identity),
      policy: this.options.policy,
      builder: this.options.builder,
      ...(this.options.baseImage ? { baseImage: this.options.baseImage } : {}),
      ...(this.options.maxDepsSize ? { maxDepsSize: this.options.maxDepsSize } : {}),
      ...(this.options.withClaude
        ? {
            withClaude: true,
            // Claude Code's own image: the npm registry (or its mirror) and nothing else.
            claudeEgress: async () => {
              const gateway = await this.egress.open(
                'claude-code',
                claudeInstallEgressRules(this.options.installDestinations),
              );
              return { network: gateway.network, proxyUrl: gateway.proxyUrl };
            },
          }
        : {}),
      ...(this.hooks.signal ? { signal: this.hooks.signal } : {}),
      // The install reaches its provider's registries (and configured mirrors) through the gateway.
      egress: async (provider) => {
        const gateway = await this.egress.open(
          'install',
          installEgressRules(provider, this.options.installDestinations),
        );
        return { network: gateway.network, proxyUrl: gateway.proxyUrl };
      },
      onLog: (line) => this.log(line),
      onEvent: (event) => {
        if (event.type === 'dephash') {
          this.done(event.dephash);
          this.emit({ phase: 'build', status: 'start', detail: event.image });
          this.current = { phase: 'build', started: performance.now() };
        }
      },
    });
    this.done(prepared.cacheHit ? `cache hit ${prepared.image}` : prepared.image);
    for (const note of prepared.notes) this.log(note);
    this.checkAborted();
    return prepared;
  }

  /**
   * The box's node_modules: real directories in the volume linking to the baked deps. It runs in
   * the box (the helper has no /deps), before create returns and anything of the repo runs there.
   */
  private async linkNodeModules(box: string, prepared: PreparedImage): Promise<void> {
    this.checkAborted();
    const link = await linkDependencies(box, prepared);
    if (link.linked)
      this.log(
        `node_modules: ${link.dirs?.length ?? 0} folder(s) in /work/repo linking ${link.entries ?? 0} entries to the deps in /deps/src`,
      );
    if (link.kept?.length)
      this.log(`node_modules the repo has itself were kept: ${link.kept.slice(0, 5).join(', ')}`);
  }

  /**
   * Once clone and install are done: says what they reached (execute then removes the gateway,
   * unless the box itself uses it: an allowlist of domains).
   */
  private async settleEgress(): Promise<EgressSummaryRow[]> {
    await this.egress.collect();
    const summary = summariseDecisions(this.egress.decisions);
    for (const row of summary) this.log(`egress: ${describeSummaryRow(row)}`);
    return summary;
  }

  private async removeHelper(): Promise<void> {
    this.stopHeartbeat();
    await docker(['rm', '--force', '--', this.names.helper]);
    this.checkAborted();
  }

  /** A URL clone, an install or an allowlist of domains goes through the egress gateway. */
  private needsGateway(): boolean {
    const urlClone = this.source.kind === 'url' && this.options.cloneNetwork === undefined;
    return urlClone || this.options.policy !== 'offline';
  }

  private boxUsesGateway(): boolean {
    return this.options.policy === 'allowlist' && this.options.allowVia === 'gateway';
  }

  private async startBox(prepared: PreparedImage, egress: EgressSummaryRow[]) {
    let network = 'none';
    const boxLabels: Record<string, string> = {};
    let env: Record<string, string> = {};
    if (this.boxUsesGateway()) {
      // The box reaches the listed destinations through the gateway and nothing else: its network
      // is internal (no route out), and names resolve only in the gateway.
      const gateway = await this.egress.openForBox(this.options.allowRules);
      // verify renders the gateway's expected configuration from these and compares the live one.
      boxLabels[LABEL_ALLOW] = this.options.allowEntries.join(',');
      boxLabels[LABEL_BLOCKED] = gateway.blocked.join(',');
      network = gateway.network;
      env = proxyEnv(gateway);
      this.checkAborted();
    } else if (this.options.policy === 'allowlist') {
      const net = await createSandboxNetwork(this.id, this.labels);
      this.firewallTouched = true;
      // The rules go in before the box starts: it never runs with open egress.
      const applied = await applyAllowlist(this.id, net, this.options.allow);
      // verify rebuilds the exact rule set from these, whatever the host's routes become.
      boxLabels[LABEL_ALLOW] = applied.allowed.join(',');
      boxLabels[LABEL_BLOCKED] = applied.blocked.join(',');
      network = net.name;
      this.checkAborted();
    }
    const box = await runContainer(
      {
        sandboxId: this.id,
        name: this.names.box,
        image: prepared.image,
        role: 'box',
        volume: this.names.volume,
        network,
        env,
        // On its user-defined network Docker's resolver would forward to the host's DNS servers:
        // an allowlist box resolves nothing itself (addresses are allowed, or names via the gateway).
        ...(this.options.policy === 'allowlist' ? { dns: 'blackhole' as const } : {}),
        runtime: this.runtime,
        memory: this.limits.memory,
        cpus: this.limits.cpus,
        pidsLimit: this.limits.pids,
        labels: {
          ...this.labels,
          ...boxLabels,
          ...sandboxRecordLabels({
            imageCacheHit: prepared.cacheHit,
            dephash: prepared.dephash,
            builder: prepared.builder,
            provider: prepared.provider,
            depsInstalled: prepared.depsInstalled,
            imageSource: prepared.imageSource,
            toolchain: prepared.toolchain,
          }),
          ...(egress.length ? { [LABEL_EGRESS]: JSON.stringify(egress) } : {}),
          ...(this.boxUsesGateway()
            ? { [LABEL_EGRESS_ALLOW]: this.options.allowRules.map(describeEgressRule).join(' ') }
            : {}),
          ...(this.options.withClaude ? { [LABEL_WITH_CLAUDE]: 'true' } : {}),
        },
      },
      {
        onStarted: () => {
          this.done(this.names.box);
          this.start('verify');
        },
      },
    );
    if (this.options.policy === 'allowlist' && !this.boxUsesGateway()) {
      // The rules went in before `docker run`, but a prune running beside this create (or anyone
      // with iptables) may have removed some since: the box is handed out only with the exact set.
      const rules = await allowlistFirewallCheck(this.id, box.inspect.Config.Labels);
      if (!rules.pass) {
        await docker(['rm', '--force', '--', box.name], { allowFailure: true });
        throw new IsolationViolationError(box.name, [rules]);
      }
      box.report = { ...box.report, checks: [...box.report.checks, rules] };
    }
    this.checkAborted();
    return box;
  }

  /**
   * Removes everything this call made; what is left (by a re-list) is returned as `<kind>:<name>`.
   * Never throws: a failed cleanup must not hide the create's own error.
   */
  async cleanup(): Promise<string[]> {
    this.stopHeartbeat();
    try {
      return await cleanupCreate(this.id, this.instance, this.firewallTouched);
    } catch (error) {
      // Docker gone: the create's own error says so, and no firewall rule was touched.
      if (error instanceof DockerUnavailableError) return [];
      this.log(`cleanup after a failed create did not finish: ${(error as Error).message}; run prune`);
      return [`sandbox:${this.id} (cleanup did not finish)`];
    }
  }

  /** Runs one phase whose result is its detail line. */
  private async phase(phase: CreatePhase, fn: () => Promise<string>): Promise<string> {
    this.checkAborted();
    this.start(phase);
    const detail = await fn();
    this.done(detail);
    return detail;
  }

  private start(phase: CreatePhase): void {
    this.emit({ phase, status: 'start' });
    this.current = { phase, started: performance.now() };
  }

  private done(detail?: string): void {
    if (!this.current) return;
    const elapsedMs = Math.round(performance.now() - this.current.started);
    this.emit({ phase: this.current.phase, status: 'done', elapsedMs, ...(detail ? { detail } : {}) });
    this.current = undefined;
  }

  /** Reports the phase that was running when the create failed. */
  failCurrent(error: unknown): void {
    if (!this.current) return;
    const elapsedMs = Math.round(performance.now() - this.current.started);
    this.emit({ phase: this.current.phase, status: 'fail', elapsedMs, detail: (error as Error).message });
    this.current = undefined;
  }

  private checkAborted(): void {
    if (this.hooks.signal?.aborted) throw new CreateAbortedError();
  }

  private emit(event: PhaseEvent): void {
    try {
      this.hooks.onPhase?.(event);
    } catch {
      // A progress printer must not break a create.
    }
  }

  private notice(line: string): void {
    try {
      this.hooks.onNotice?.(line);
    } catch {
      // idem
    }
    this.log(line);
  }

  private log(line: string): void {
    try {
      this.hooks.onLog?.(line);
    } catch {
      // idem
    }
  }
}
