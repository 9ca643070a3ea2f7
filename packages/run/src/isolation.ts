import {
  BOX_USER,
  type ContainerInspect,
  IMAGE_VIEW_DIR,
  type ImageViewFacts,
  imageViewMatches,
  LABEL_ID,
  LABEL_ROLE,
  RAW_REPO_DIR,
  REPO_DIR,
  type RepoViewFacts,
  repoViewMatches,
  SANDBOX_LABEL,
  SANDBOX_LABEL_VALUE,
  sandboxNames,
  ulimitRows,
} from '@ca-sandbox/docker';
import type { IsolationCheck } from './isolation-check.js';
import { BLACKHOLE_DNS, PROXY_ENV_NAMES } from './run-args.js';

export type { IsolationCheck } from './isolation-check.js';

export interface IsolationReport {
  ok: boolean;
  container: string;
  checks: IsolationCheck[];
}

export interface IsolationExpectations {
  network: string;
  runtime: string;
  sandboxId?: string;
  /** Helpers may run without the source volume; boxes must have it at /work/repo. */
  requireRepoVolume?: boolean;
  /** A gateway: no volume at all may be mounted (it must never see the source). */
  forbidVolumes?: boolean;
  /**
   * Networks the container may be attached to besides `network` (a gateway sits on the sandbox's
   * internal network as well). Anything else attached fails the `attached-networks` row.
   */
  extraNetworks?: string[];
  /** Env names the caller set on purpose: a proxy variable among them may carry a value. */
  allowedEnv?: string[];
  /**
   * The daemon's `docker info` SecurityOptions (runContainer and verifyContainer always pass them).
   * When not given the daemon-seccomp row passes with seen 'unknown', keeping this function pure.
   */
  daemonSecurityOptions?: string[];
  /** `blackhole`: the resolver must be exactly BLACKHOLE_DNS (allowlist boxes resolve no name). */
  dns?: 'default' | 'blackhole';
  /** The gateway: its log is its egress record. Any other container must log nothing (keepsLog). */
  keepsLog?: boolean;
  /** The id of its own sandbox's box, whose PID namespace a helper joined (the report's lister). */
  pidOf?: string;
  /** What is mounted at IMAGE_VIEW_DIR and what it must be (imageViewFacts); absent: nothing is. */
  imageView?: ImageViewFacts;
  /**
   * What is mounted at REPO_DIR and RAW_REPO_DIR in a box with a repo view, and what it must be
   * (repoViewFacts); absent: nothing is at RAW_REPO_DIR.
   */
  repoView?: RepoViewFacts;
}

type Rule = (
  inspect: ContainerInspect,
  expected: IsolationExpectations,
) => Omit<IsolationCheck, 'pass'> & { pass: boolean };

/** `name=seccomp,profile=default` → { name: 'seccomp', profile: 'default' }. */
function parseSecurityOption(option: string): Record<string, string> {
  return Object.fromEntries(
    option.split(',').map((part) => {
      const at = part.indexOf('=');
      return at < 0 ? [part, ''] : [part.slice(0, at), part.slice(at + 1)];
    }),
  );
}

function daemonOption(options: string[] | undefined, name: string): Record<string, string> | undefined {
  return options?.map(parseSecurityOption).find((option) => option.name === name);
}

const PROXY_NAMES = new Set(PROXY_ENV_NAMES.map((name) => name.toUpperCase()));

const list = (values: readonly unknown[]): string => (values.length ? values.map(String).join(',') : 'none');
const isHost = (mode: string): boolean => mode === 'host' || mode.startsWith('container:');

/** Whether a volume at `target` is the box's own view of its image (the image-view row checks it). */
function viewMount(target: string, e: IsolationExpectations): boolean {
  return target === IMAGE_VIEW_DIR && e.imageView !== undefined && imageViewMatches(e.imageView);
}

/** Whether the volumes at REPO_DIR and RAW_REPO_DIR are the box's own repo view (the repo-view row checks it). */
function repoViewMount(e: IsolationExpectations): boolean {
  return !e.forbidVolumes && e.repoView !== undefined && repoViewMatches(e.repoView);
}

function allMounts(inspect: ContainerInspect): { type: string; source: string; target: string }[] {
  const declared = inspect.HostConfig.Mounts.map((m) => ({
    type: m.Type,
    source: m.Source ?? '',
    target: m.Target,
  }));
  const active = inspect.Mounts.map((m) => ({
    type: m.Type,
    source: m.Name ?? m.Source ?? '',
    target: m.Destination,
  }));
  const binds = inspect.HostConfig.Binds.map((bind) => {
    const [source = '', target = ''] = bind.split(':');
    return { type: 'bind', source, target };
  });
  return [...declared, ...active, ...binds];
}

/**
 * A daemon started with --seccomp-profile=unconfined (or without seccomp) confines no container,
 * whatever the container's own SecurityOpt says.
 */
function daemonSeccompCheck(daemonSecurityOptions: string[] | undefined): IsolationCheck {
  const known = daemonSecurityOptions !== undefined;
  const seccomp = daemonOption(daemonSecurityOptions, 'seccomp');
  const profile = seccomp ? (seccomp.profile ?? 'default') : undefined;
  let seen = 'unknown (daemon options not read)';
  if (known) seen = profile ? `profile=${profile}` : 'seccomp not available';
  return {
    id: 'daemon-seccomp',
    cis: '5.21',
    title: 'the daemon applies a seccomp profile to containers',
    expected: 'seccomp listed, profile not unconfined',
    seen,
    pass: !known || (profile !== undefined && profile.toLowerCase() !== 'unconfined'),
  };
}

const RULES: Rule[] = [
  (i) => {
    const binds = allMounts(i).filter((m) => m.type !== 'volume' && m.type !== 'tmpfs');
    return {
      id: 'no-host-mounts',
      cis: '5.5',
      title: 'no bind mount or other host path is mounted',
      expected: 'volume and tmpfs mounts only',
      seen: binds.length
        ? binds.map((m) => `${m.type}:${m.source}->${m.target}`).join(',')
        : 'volume/tmpfs only',
      pass: binds.length === 0 && i.HostConfig.VolumesFrom.length === 0,
    };
  },
  (i) => {
    const sockets = allMounts(i).filter((m) => /docker\.sock/i.test(`${m.source} ${m.target}`));
    return {
      id: 'no-docker-socket',
      cis: '5.31',
      title: 'the docker socket is not mounted',
      expected: 'absent',
      seen: sockets.length ? sockets.map((m) => m.target).join(',') : 'absent',
      pass: sockets.length === 0,
    };
  },
  (i, e) => {
    // A box's view of its image is the image-view row's, its own volume beside its repo view the
    // repo-view row's: every other volume is the source's (the repo view, at REPO_DIR).
    const volumes = i.Mounts.filter(
      (m) =>
        m.Type === 'volume' &&
        (e.forbidVolumes || !viewMount(m.Destination, e)) &&
        !(m.Destination === RAW_REPO_DIR && repoViewMount(e)),
    );
    const targets = volumes.map((m) => m.Destination);
    const onlyRepo = targets.every((target) => target === REPO_DIR);
    const required = e.requireRepoVolume ?? true;
    return {
      id: 'volume-only-at-repo',
      cis: '5.5',
      title: 'the source volume mounts only at /work/repo',
      expected: REPO_DIR,
      seen: list(targets),
      pass:
        onlyRepo &&
        volumes.length <= (e.forbidVolumes ? 0 : 1) &&
        (!required || e.forbidVolumes || volumes.length === 1),
    };
  },
  (i, e) => {
    const view = i.Mounts.find((m) => m.Type === 'volume' && m.Destination === IMAGE_VIEW_DIR);
    const facts = e.imageView;
    let seen = 'none';
    if (view && facts) {
      const derived = 'reason' in facts.derived ? ` (${facts.derived.reason})` : '';
      seen = `${facts.mounted}: ${imageViewMatches(facts) ? 'overlay of its own image' : `not its own image's overlay${derived}`}`;
    } else if (view) seen = `${view.Name ?? view.Source ?? '?'}: not read`;
    return {
      id: 'image-view',
      cis: '5.5',
      title: `what is at ${IMAGE_VIEW_DIR} is the box's own image, written only to its sandbox's volumes`,
      expected: 'none, or the overlay of its own image layers on its own volumes',
      seen,
      pass: !view || (!e.forbidVolumes && viewMount(IMAGE_VIEW_DIR, e)),
    };
  },
  (i, e) => {
    const raw = i.Mounts.find((m) => m.Type === 'volume' && m.Destination === RAW_REPO_DIR);
    const atRepo = i.Mounts.find((m) => m.Type === 'volume' && m.Destination === REPO_DIR);
    const sandboxId = i.Config.Labels[LABEL_ID] ?? '';
    const names = sandboxNames(sandboxId);
    const viewName = names.repoView.view;
    // A box without a view has its sandbox's own volume there, by name (helpers mount others:
    // the report's listers, read-only).
    const own = i.Config.Labels[LABEL_ROLE] !== 'box' || !atRepo || atRepo.Name === names.volume;
    const facts = e.repoView;
    let seen = 'none';
    if (raw && facts) {
      const derived = 'reason' in facts.derived ? ` (${facts.derived.reason})` : '';
      seen = repoViewMatches(facts)
        ? `${facts.mounted}: overlay of its image's deps on ${facts.raw.mounted} (read-only at ${RAW_REPO_DIR})`
        : `${facts.mounted}: not its own repo view${derived}; at ${RAW_REPO_DIR}: ${facts.raw.mounted}${facts.raw.readOnly ? ' (read-only)' : ' (writable)'}`;
    } else if (raw) seen = `${raw.Name ?? raw.Source ?? '?'} at ${RAW_REPO_DIR}: not read`;
    else if (atRepo?.Name === viewName)
      seen = `${viewName} at ${REPO_DIR} without its volume at ${RAW_REPO_DIR}`;
    else if (!own) seen = `${atRepo?.Name ?? '?'} at ${REPO_DIR}: not the sandbox's own volume`;
    return {
      id: 'repo-view',
      cis: '5.5',
      title: `what is at ${REPO_DIR} is the sandbox's volume, or the overlay of its image's deps on it`,
      expected: `no repo view, or the overlay of its own image's install layer on its own volume, that volume read-only at ${RAW_REPO_DIR}`,
      seen,
      pass: raw ? repoViewMount(e) : atRepo?.Name !== viewName && own,
    };
  },
  (i) => ({
    id: 'not-privileged',
    cis: '5.4',
    title: 'the container is not privileged',
    expected: 'false',
    seen: String(i.HostConfig.Privileged),
    pass: i.HostConfig.Privileged === false,
  }),
  (i) => ({
    id: 'cap-drop-all',
    cis: '5.3',
    title: 'all capabilities dropped, none added',
    expected: 'CapDrop=ALL CapAdd=none',
    seen: `CapDrop=${list(i.HostConfig.CapDrop)} CapAdd=${list(i.HostConfig.CapAdd)}`,
    pass:
      i.HostConfig.CapDrop.map((c) => c.toUpperCase()).includes('ALL') && i.HostConfig.CapAdd.length === 0,
  }),
  (i) => ({
    id: 'read-only-rootfs',
    cis: '5.12',
    title: 'the root filesystem is read-only',
    expected: 'true',
    seen: String(i.HostConfig.ReadonlyRootfs),
    pass: i.HostConfig.ReadonlyRootfs === true,
  }),
  (i) => ({
    id: 'non-root-user',
    cis: '4.1',
    title: 'the process runs as the unprivileged sandbox user',
    expected: BOX_USER,
    seen: i.Config.User || 'root (empty)',
    pass: i.Config.User === BOX_USER,
  }),
  (i) => {
    const opts = i.HostConfig.SecurityOpt;
    return {
      id: 'no-new-privileges',
      cis: '5.25',
      title: 'processes cannot gain privileges (setuid, file caps)',
      expected: 'no-new-privileges',
      seen: list(opts),
      pass: opts.some((o) => /^no-new-privileges(?:[:=]true)?$/.test(o)),
    };
  },
  (i) => ({
    id: 'pids-limit',
    cis: '5.28',
    title: 'the number of processes is limited',
    expected: '> 0',
    seen: String(i.HostConfig.PidsLimit ?? 'unlimited'),
    pass: (i.HostConfig.PidsLimit ?? 0) > 0,
  }),
  (i) => ({
    id: 'memory-limit',
    cis: '5.10',
    title: 'memory is limited and swap adds nothing',
    expected: 'Memory > 0, MemorySwap = Memory',
    seen: `Memory=${i.HostConfig.Memory} MemorySwap=${i.HostConfig.MemorySwap}`,
    pass: i.HostConfig.Memory > 0 && i.HostConfig.MemorySwap === i.HostConfig.Memory,
  }),
  (i) => ({
    id: 'cpu-limit',
    cis: '5.11',
    title: 'CPU is limited',
    expected: 'NanoCpus > 0',
    seen: String(i.HostConfig.NanoCpus),
    pass: i.HostConfig.NanoCpus > 0,
  }),
  // The same rows the install step checks of itself (@ca-sandbox/docker hardening).
  (i) => ({ cis: '5.18', ...ulimitRows(i.HostConfig.Ulimits)[0] }),
  (i) => ({ cis: '5.18', ...ulimitRows(i.HostConfig.Ulimits)[1] }),
  (i) => {
    const bindings = [
      ...Object.values(i.HostConfig.PortBindings),
      ...Object.values(i.NetworkSettings.Ports),
    ].flatMap((b) => b ?? []);
    return {
      id: 'no-published-ports',
      cis: '5.8',
      title: 'no port is published on the host',
      expected: 'none',
      seen: bindings.length || i.HostConfig.PublishAllPorts ? `${bindings.length} binding(s)` : 'none',
      pass: bindings.length === 0 && !i.HostConfig.PublishAllPorts,
    };
  },
  (i) => ({
    id: 'no-host-network',
    cis: '5.9',
    title: "the host's network namespace is not shared",
    expected: 'not host',
    seen: i.HostConfig.NetworkMode || 'default',
    pass: !isHost(i.HostConfig.NetworkMode),
  }),
  (i, e) => ({
    id: 'no-host-pid',
    cis: '5.15',
    title: "the host's process namespace is not shared",
    expected: e.pidOf ? `container:${e.pidOf} (its own sandbox's box)` : 'private',
    seen: i.HostConfig.PidMode || 'private',
    pass: e.pidOf ? i.HostConfig.PidMode === `container:${e.pidOf}` : !isHost(i.HostConfig.PidMode),
  }),
  (i) => ({
    id: 'no-host-ipc',
    cis: '5.16',
    title: "the host's IPC namespace is not shared",
    expected: 'private',
    seen: i.HostConfig.IpcMode || 'private',
    pass: !isHost(i.HostConfig.IpcMode) && i.HostConfig.IpcMode !== 'shareable',
  }),
  (i) => ({
    id: 'no-host-uts',
    cis: '5.20',
    title: "the host's UTS namespace is not shared",
    expected: 'private',
    seen: i.HostConfig.UTSMode || 'private',
    pass: !isHost(i.HostConfig.UTSMode),
  }),
  (i) => ({
    id: 'no-host-userns',
    cis: '5.30',
    title: "the host's user namespace mode is not forced",
    expected: 'default',
    seen: i.HostConfig.UsernsMode || 'default',
    pass: i.HostConfig.UsernsMode !== 'host',
  }),
  (i) => ({
    id: 'no-devices',
    cis: '5.17',
    title: 'no host device is exposed',
    expected: 'none',
    seen: `${i.HostConfig.Devices.length} device(s), ${i.HostConfig.DeviceRequests.length} request(s)`,
    pass: i.HostConfig.Devices.length === 0 && i.HostConfig.DeviceRequests.length === 0,
  }),
  (i) => {
    const off = i.HostConfig.SecurityOpt.filter((o) => /^seccomp[:=]unconfined$/i.test(o));
    return {
      id: 'seccomp-confined',
      cis: '5.21',
      title: 'the default seccomp profile is not disabled',
      expected: 'not unconfined',
      seen: off.length ? 'unconfined' : 'default',
      pass: off.length === 0,
    };
  },
  (_i, e) => daemonSeccompCheck(e.daemonSecurityOptions),
  (i, e) => {
    const off = i.HostConfig.SecurityOpt.filter((o) => /^apparmor[:=]unconfined$/i.test(o));
    const available =
      e.daemonSecurityOptions === undefined
        ? undefined
        : Boolean(daemonOption(e.daemonSecurityOptions, 'apparmor'));
    // Hosts without AppArmor (no LSM in the kernel) cannot confine with it: said, not failed.
    const seen = off.length ? 'unconfined' : available === false ? 'not available on this host' : 'default';
    return {
      id: 'apparmor-confined',
      cis: '5.1',
      title: 'AppArmor is not disabled',
      expected: 'not unconfined',
      seen,
      pass: off.length === 0,
    };
  },
  (i, e) => {
    const allowed = new Set(e.allowedEnv ?? []);
    const leaked = i.Config.Env.flatMap((entry) => {
      const at = entry.indexOf('=');
      const name = at < 0 ? entry : entry.slice(0, at);
      const value = at < 0 ? '' : entry.slice(at + 1);
      return PROXY_NAMES.has(name.toUpperCase()) && value !== '' && !allowed.has(name) ? [name] : [];
    });
    return {
      id: 'no-proxy-env',
      cis: '-',
      title: "no proxy variable (the docker client's config.json proxies) reaches the box unasked",
      expected: 'proxy variables empty unless named by the caller',
      // Names only: the values may hold credentials.
      seen: leaked.length ? `set: ${leaked.join(',')}` : 'none set',
      pass: leaked.length === 0,
    };
  },
  (i, e) => {
    const servers = i.HostConfig.Dns;
    const blackhole = e.dns === 'blackhole';
    return {
      id: 'dns-blackhole',
      cis: '-',
      title: 'a box whose policy resolves no name has its resolver on its own loopback',
      expected: blackhole ? BLACKHOLE_DNS : 'not required',
      seen: servers.length ? servers.join(',') : 'docker default',
      pass: !blackhole || (servers.length === 1 && servers[0] === BLACKHOLE_DNS),
    };
  },
  (i) => {
    const entrypoint = i.Config.Entrypoint ?? [];
    const main = i.Config.Cmd?.[0] ?? '';
    return {
      id: 'own-main-process',
      cis: '-',
      title:
        "the main process is ours, by absolute path: no image entrypoint, nothing looked up on the image's PATH",
      expected: 'no entrypoint; the command an absolute path',
      seen: `${entrypoint.length ? `entrypoint ${entrypoint.join(' ').slice(0, 80)}` : 'no entrypoint'}; command ${main.slice(0, 80) || '(none)'}`,
      pass: entrypoint.length === 0 && main.startsWith('/'),
    };
  },
  (i, e) => ({
    id: 'no-host-log',
    cis: '-',
    title: "what the container writes to its stdout is not stored on the host's disk",
    expected: e.keepsLog ? 'any (the gateway: its log is the egress record)' : 'log driver none',
    seen: i.HostConfig.LogConfig.Type || 'daemon default',
    pass: e.keepsLog === true || i.HostConfig.LogConfig.Type === 'none',
  }),
  (i, e) => ({
    id: 'network-policy',
    cis: '5.29',
    title: 'the container is on the network its policy names',
    expected: e.network,
    seen: i.HostConfig.NetworkMode || 'default',
    pass: i.HostConfig.NetworkMode === e.network,
  }),
  (i, e) => {
    const attached = Object.keys(i.NetworkSettings.Networks).sort();
    const allowed = new Set([e.network, ...(e.extraNetworks ?? [])]);
    return {
      id: 'attached-networks',
      cis: '5.29',
      title: 'the container is attached to no network but the ones its role names',
      expected: list([...allowed].sort()),
      seen: list(attached),
      pass: attached.every((name) => allowed.has(name)),
    };
  },
  (i, e) => ({
    id: 'runtime',
    cis: '5.24',
    title: 'the container runs under the requested runtime',
    expected: e.runtime,
    seen: i.HostConfig.Runtime || 'default',
    pass: i.HostConfig.Runtime === e.runtime,
  }),
  (i, e) => {
    const labels = i.Config.Labels;
    const owned = labels[SANDBOX_LABEL] === SANDBOX_LABEL_VALUE;
    const idOk = e.sandboxId === undefined ? Boolean(labels[LABEL_ID]) : labels[LABEL_ID] === e.sandboxId;
    return {
      id: 'labeled',
      cis: '-',
      title: 'the container carries the ca.sandbox labels teardown relies on',
      expected: `ca.sandbox=1, ca.sandbox.id=${e.sandboxId ?? '<id>'}`,
      seen: `ca.sandbox=${labels[SANDBOX_LABEL] ?? 'missing'}, ca.sandbox.id=${labels[LABEL_ID] ?? 'missing'}`,
      pass: owned && idOk,
    };
  },
];

/**
 * The rows that depend on the daemon alone (`docker info` SecurityOptions), checkable before any
 * container starts.
 */
export function verifyDaemon(daemonSecurityOptions: string[]): IsolationCheck[] {
  return [daemonSeccompCheck(daemonSecurityOptions)];
}

/**
 * Checks a container's `docker inspect` document against every isolation invariant.
 * Pure: the caller decides what to do with a failing report (runContainer removes the box).
 */
export function verifyIsolation(inspect: ContainerInspect, expected: IsolationExpectations): IsolationReport {
  const checks = RULES.map((rule) => rule(inspect, expected));
  return { ok: checks.every((check) => check.pass), container: inspect.Name.replace(/^\//, ''), checks };
}
