import type { PreparedImage } from '@ca-sandbox/build';
import {
  type ContainerInspect,
  engine,
  holdVolumes,
  prepareImageView,
  prepareRepoView,
  unmountedViewVolumes,
  viewEnvFor,
} from '@ca-sandbox/docker';
import { applyAllowlist, createSandboxNetwork, describeEgressRule } from '@ca-sandbox/network';
import { type EgressGateway, IsolationViolationError, runContainer } from '@ca-sandbox/run';
import { boxEnv, userCaPem, writeBoxTrust } from '../box-env.js';
import { writeClaudeHome } from '../claude-home.js';
import { claudeKeyEnv, gatewayHoldsClaudeKey } from '../credentials.js';
import { type EgressSummaryRow, LABEL_EGRESS } from '../egress.js';
import { allowlistFirewallCheck } from '../list.js';
import {
  LABEL_ALLOW,
  LABEL_BLOCKED,
  LABEL_CREDENTIALS,
  LABEL_EGRESS_ALLOW,
  LABEL_GATEWAY_HOSTS,
  LABEL_WITH_CLAUDE,
  sandboxRecordLabels,
} from '../record.js';
import type { CreateContext } from './context.js';

/** Where the box's traffic may go, set up before the box exists, and the labels verify checks it by. */
interface BoxNetwork {
  network: string;
  /** The box's own gateway, when its traffic goes through one. */
  gateway?: EgressGateway;
  labels: Record<string, string>;
}

/**
 * The box's network: none (offline, clone-then-cut); an internal network whose only way out is the
 * gateway (an allowlist of domains); or its own network with the firewall rules already in
 * (an allowlist of addresses): the box never runs with open egress.
 */
async function boxNetwork(ctx: CreateContext): Promise<BoxNetwork> {
  const { options } = ctx;
  if (ctx.boxUsesGateway()) {
    // The box reaches the listed destinations through the gateway and nothing else: its network
    // is internal (no route out), and names resolve only in the gateway.
    const gateway = await ctx.egress.openForBox(
      options.allowRules,
      ctx.credentials.length ? { credentials: ctx.credentials, upstreamCa: userCaPem() } : {},
    );
    ctx.checkAborted();
    // verify renders the gateway's expected configuration from these and compares the live one.
    return {
      network: gateway.network,
      gateway,
      labels: {
        [LABEL_ALLOW]: options.allowEntries.join(','),
        [LABEL_BLOCKED]: gateway.blocked.join(','),
        ...(gateway.hostPins.length
          ? { [LABEL_GATEWAY_HOSTS]: gateway.hostPins.map((pin) => `${pin.name}=${pin.address}`).join(',') }
          : {}),
        // Where each credential goes and where it was read from: `start` reads it again from there.
        ...(options.credentials.length ? { [LABEL_CREDENTIALS]: JSON.stringify(options.credentials) } : {}),
      },
    };
  }
  if (options.policy === 'allowlist') {
    const net = await createSandboxNetwork(ctx.id, ctx.labels);
    ctx.firewallTouched = true;
    // The rules go in before the box starts: it never runs with open egress.
    const applied = await applyAllowlist(ctx.id, net, options.allow);
    ctx.checkAborted();
    // verify rebuilds the exact rule set from these, whatever the host's routes become.
    return {
      network: net.name,
      labels: { [LABEL_ALLOW]: applied.allowed.join(','), [LABEL_BLOCKED]: applied.blocked.join(',') },
    };
  }
  return { network: 'none', labels: {} };
}

/**
 * The labels a box of `prepared` gets besides its network's: the create's, the record's, the
 * egress rows. A box started early (speculate.ts) is kept only when these are the same.
 */
export function boxRecordLabels(
  ctx: CreateContext,
  prepared: PreparedImage,
  egress: EgressSummaryRow[],
): Record<string, string> {
  const { options } = ctx;
  return {
    ...ctx.labels,
    ...sandboxRecordLabels({
      imageCacheHit: prepared.cacheHit,
      dephash: prepared.dephash,
      builder: prepared.builder,
      provider: prepared.provider,
      depsInstalled: prepared.depsInstalled,
      imageSource: prepared.imageSource,
      toolchain: prepared.toolchain,
      installFallbacks: prepared.installFallbacks,
    }),
    ...(egress.length ? { [LABEL_EGRESS]: JSON.stringify(egress) } : {}),
    ...(ctx.boxUsesGateway()
      ? { [LABEL_EGRESS_ALLOW]: options.allowRules.map(describeEgressRule).join(' ') }
      : {}),
    ...(options.withClaude ? { [LABEL_WITH_CLAUDE]: 'true' } : {}),
  };
}

/**
 * The box's writable view of its image (@ca-sandbox/docker image-view), when it has deps: a tool
 * that writes into a dependency's folder then works as on a developer's machine. Where the engine
 * cannot make one the deps stay read-only, and the create says so.
 */
async function imageView(ctx: CreateContext, prepared: PreparedImage) {
  if (!prepared.depsInstalled) return undefined;
  // gVisor keys its file cache by the host's inode numbers, which its root filesystem and the
  // view (two overlays of the same layers) share: a folder copied up in one then fails every
  // lookup (EINVAL) in both. Tried with runsc; a gVisor box keeps its deps read-only.
  const view =
    ctx.runtime === 'runsc'
      ? { reason: 'gVisor cannot hold two overlays of the same image layers' }
      : await prepareImageView(ctx.id, prepared.image, ctx.labels);
  if ('volume' in view) return view;
  ctx.progress.notice(
    `the dependencies stay read-only in this box (${view.reason}): a tool writing into their folders gets EROFS`,
  );
  return undefined;
}

/**
 * The box's repo view (@ca-sandbox/docker repo-view), with setting deps.view overlay (the
 * default): the checkout over what the node install wrote, so node_modules are real folders of
 * the project. Where it cannot be made the box links its node_modules instead, and the create
 * says why: a notice when the user chose the view, a log line when it was the default.
 */
async function repoView(ctx: CreateContext, prepared: PreparedImage) {
  if (ctx.options.depsView !== 'overlay' || !prepared.depsInstalled || !prepared.linkNodeModules)
    return undefined;
  // As for the image view: gVisor cannot hold two overlays of the same image layers.
  const view =
    ctx.runtime === 'runsc'
      ? { reason: 'gVisor cannot hold two overlays of the same image layers' }
      : await prepareRepoView(ctx.id, prepared.image, ctx.labels);
  if ('volume' in view) return view;
  const line = `deps.view overlay: node_modules are links into the image in this box (${view.reason})`;
  if (ctx.options.depsViewChosen) ctx.progress.notice(line);
  else ctx.progress.log(line);
  return undefined;
}

/**
 * The box's view volumes that no container mounts (their overlays name them by path), held by a
 * container that is never started, so that `docker volume prune` cannot take them from under it
 * (@ca-sandbox/docker inert-container.ts). Only for the box handed out; a box without views has none.
 * Of the image the box runs, by id (its tag may have moved since). Started beside the rest of the
 * create's end, so that a failing create's clean-up waits for it before it lists what to remove.
 */
export function holdViewVolumes(ctx: CreateContext, box: ContainerInspect, prepared: PreparedImage) {
  const image = box.Image ?? prepared.image;
  return ctx.beside(holdVolumes(ctx.id, image, unmountedViewVolumes(box, ctx.id), ctx.labels));
}

/**
 * Phases 'run' (until the container has started) and 'verify' (runContainer's isolation gate: inspect
 * and checks, plus the firewall rules of an allowlist): a box failing any check is removed before
 * it is handed out. `onStarted` replaces the phase events (a box started early reports none).
 */
export async function startBox(
  ctx: CreateContext,
  prepared: PreparedImage,
  egress: EgressSummaryRow[],
  onStarted: () => void = () => {
    ctx.progress.done(ctx.names.box);
    ctx.progress.start('verify');
  },
  startAfter?: Promise<boolean>,
) {
  const { options } = ctx;
  const [net, view, repo] = await Promise.all([
    boxNetwork(ctx),
    imageView(ctx, prepared),
    repoView(ctx, prepared),
  ]);
  const box = await runContainer(
    {
      sandboxId: ctx.id,
      name: ctx.names.box,
      image: prepared.image,
      role: 'box',
      volume: ctx.names.volume,
      ...(view ? { imageView: view.volume } : {}),
      ...(repo ? { repoView: repo.volume } : {}),
      network: net.network,
      env: {
        // With a repo view, the deps under /deps/src are the ones under /work/repo (one instance).
        ...(repo ? viewEnvFor(repo.imageEnv, view !== undefined) : view?.env),
        ...boxEnv({
          gateway: net.gateway,
          reachesNetwork: options.policy === 'allowlist',
          toolchain: prepared.toolchain,
          trustedCa: prepared.trustedCa,
          gatewayCa: net.gateway?.credentialCa !== undefined,
        }),
        ...claudeKeyEnv(options.withClaude, options.credentials),
      },
      // On its user-defined network Docker's resolver would forward to the host's DNS servers:
      // an allowlist box resolves nothing itself (addresses are allowed, or names via the gateway).
      ...(options.policy === 'allowlist' ? { dns: 'blackhole' as const } : {}),
      runtime: ctx.runtime,
      memory: ctx.limits.memory,
      cpus: ctx.limits.cpus,
      pidsLimit: ctx.limits.pids,
      labels: { ...boxRecordLabels(ctx, prepared, egress), ...net.labels },
    },
    { onStarted, ...(startAfter ? { beforeStart: () => startAfter } : {}) },
  );
  if (options.policy === 'allowlist' && !ctx.boxUsesGateway()) {
    // The rules went in before the start, but a prune running beside this create (or anyone
    // with iptables) may have removed some since: the box is handed out only with the exact set.
    const rules = await allowlistFirewallCheck(ctx.id, box.inspect.Config.Labels);
    if (!rules.pass) {
      await engine.container.remove(box.name, { force: true }).catch(() => undefined);
      throw new IsolationViolationError(box.name, [rules]);
    }
    box.report = { ...box.report, checks: [...box.report.checks, rules] };
  }
  if (net.gateway?.credentialCa) {
    try {
      await writeBoxTrust(box.name, net.gateway.credentialCa);
      if (gatewayHoldsClaudeKey(options.withClaude, options.credentials)) await writeClaudeHome(box.name);
    } catch (error) {
      await engine.container.remove(box.name, { force: true }).catch(() => undefined);
      throw error;
    }
  }
  ctx.checkAborted();
  return box;
}
