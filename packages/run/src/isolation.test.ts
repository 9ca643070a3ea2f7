import {
  IMAGE_VIEW_DIR,
  type ImageViewFacts,
  parseContainerInspect,
  RAW_REPO_DIR,
  type RepoViewFacts,
} from '@ca-sandbox/docker';
import { describe, expect, it } from 'vitest';
import { verifyDaemon, verifyIsolation } from './isolation.js';

/** A document shaped like `docker inspect` of a box started by runContainer. */
function goodInspect(): Record<string, any> {
  return {
    Id: 'f'.repeat(64),
    Name: '/ca-sbx-abc',
    State: { Status: 'running', Running: true, OOMKilled: false },
    Config: {
      User: '1000:1000',
      Image: 'ca-sbx-base:debian',
      Env: ['HOME=/tmp'],
      Labels: { 'ca.sandbox': '1', 'ca.sandbox.id': 'abc' },
      WorkingDir: '/work/repo',
      Cmd: ['/bin/sleep', 'infinity'],
      Entrypoint: null,
    },
    HostConfig: {
      Binds: null,
      Privileged: false,
      CapAdd: null,
      CapDrop: ['ALL'],
      ReadonlyRootfs: true,
      SecurityOpt: ['no-new-privileges'],
      Ulimits: [
        { Name: 'core', Soft: 0, Hard: 0 },
        { Name: 'fsize', Soft: 1073741824, Hard: 1073741824 },
      ],
      PidsLimit: 512,
      Memory: 2147483648,
      MemorySwap: 2147483648,
      NanoCpus: 2000000000,
      PortBindings: {},
      PublishAllPorts: false,
      PidMode: '',
      IpcMode: 'private',
      UTSMode: '',
      UsernsMode: '',
      NetworkMode: 'none',
      Devices: [],
      DeviceRequests: null,
      Runtime: 'runc',
      Mounts: [{ Type: 'volume', Source: 'ca-sbx-abc', Target: '/work/repo' }],
      Tmpfs: { '/tmp': 'nosuid,nodev,size=512m' },
      LogConfig: { Type: 'none', Config: {} },
    },
    Mounts: [
      {
        Type: 'volume',
        Name: 'ca-sbx-abc',
        Source: '/var/lib/docker/volumes/x',
        Destination: '/work/repo',
        RW: true,
      },
    ],
    NetworkSettings: { Networks: { none: {} }, Ports: {} },
  };
}

const expected = { network: 'none', runtime: 'runc', sandboxId: 'abc' };

function failedIds(mutate: (doc: Record<string, any>) => void, exp = expected): string[] {
  const doc = goodInspect();
  mutate(doc);
  return verifyIsolation(parseContainerInspect(doc), exp)
    .checks.filter((check) => !check.pass)
    .map((check) => check.id);
}

describe('verifyIsolation', () => {
  it('passes a box started as runContainer starts it', () => {
    const report = verifyIsolation(parseContainerInspect(goodInspect()), expected);
    expect(report.checks.filter((check) => !check.pass)).toEqual([]);
    expect(report.ok).toBe(true);
    expect(report.container).toBe('ca-sbx-abc');
  });

  it("lets the report's lister share exactly its own sandbox's box PID namespace, nothing else", () => {
    const joins = (mode: string) => (d: Record<string, any>) => (d.HostConfig.PidMode = mode);
    const lister = { ...expected, pidOf: 'b0x1d' } as typeof expected;
    expect(failedIds(joins('container:b0x1d'), lister)).toEqual([]);
    expect(failedIds(joins('container:other'), lister)).toEqual(['no-host-pid']);
    expect(failedIds(joins('host'), lister)).toEqual(['no-host-pid']);
    // Held to it: a lister that did not join is not what was started either.
    expect(failedIds(joins(''), lister)).toEqual(['no-host-pid']);
    expect(failedIds(joins('container:b0x1d'))).toEqual(['no-host-pid']);
  });

  it("lets a box mount only its own sandbox's overlay view of its own image at the view's path", () => {
    const derived = {
      driverOpts: { type: 'overlay', device: 'overlay', o: 'lowerdir=/l/1,upperdir=/u,workdir=/w' },
    };
    const facts = (overrides: Partial<ImageViewFacts> = {}): ImageViewFacts => ({
      mounted: 'ca-sbx_view-abc',
      expected: 'ca-sbx_view-abc',
      driver: 'local',
      options: { ...derived.driverOpts },
      derived,
      ...overrides,
    });
    const mountView =
      (name = 'ca-sbx_view-abc', target = IMAGE_VIEW_DIR) =>
      (d: Record<string, any>) =>
        d.Mounts.push({ Type: 'volume', Name: name, Source: '/v', Destination: target, RW: true });
    const withView = (view: ImageViewFacts) => ({ ...expected, imageView: view }) as typeof expected;
    expect(failedIds(mountView(), withView(facts()))).toEqual([]);
    // Another image's layers, a foreign upper directory, another volume, a driver of its own.
    const otherLayers = { ...derived.driverOpts, o: 'lowerdir=/etc,upperdir=/u,workdir=/w' };
    expect(failedIds(mountView(), withView(facts({ options: otherLayers })))).toEqual([
      'volume-only-at-repo',
      'image-view',
    ]);
    expect(failedIds(mountView(), withView(facts({ derived: { reason: 'the image is gone' } })))).toContain(
      'image-view',
    );
    expect(failedIds(mountView(), withView(facts({ mounted: 'ca-sbx-other' })))).toContain('image-view');
    expect(failedIds(mountView(), withView(facts({ driver: 'nfs' })))).toContain('image-view');
    // Not read by the caller: refused. The view at any other path is just another volume.
    expect(failedIds(mountView())).toEqual(['volume-only-at-repo', 'image-view']);
    expect(failedIds(mountView('ca-sbx_view-abc', '/deps'), withView(facts()))).toEqual([
      'volume-only-at-repo',
    ]);
    // A gateway never has one.
    const gateway = {
      ...withView(facts()),
      forbidVolumes: true,
      requireRepoVolume: false,
    } as typeof expected;
    expect(failedIds(mountView(), gateway)).toEqual(['volume-only-at-repo', 'image-view']);
  });

  it('lets a box mount at /work/repo only its own repo view, with its own volume read-only beside', () => {
    const derived = {
      driverOpts: { type: 'overlay', device: 'overlay', o: 'lowerdir=/l/deps/src,upperdir=/u,workdir=/w' },
    };
    const facts = (overrides: Partial<RepoViewFacts> = {}): RepoViewFacts => ({
      mounted: 'ca-sbx_repo-abc',
      expected: 'ca-sbx_repo-abc',
      driver: 'local',
      options: { ...derived.driverOpts },
      derived,
      raw: { mounted: 'ca-sbx-abc', own: true, readOnly: true },
      ...overrides,
    });
    // The box of a repo view: the view at /work/repo, its own volume read-only at RAW_REPO_DIR.
    const viewed =
      (raw = 'ca-sbx-abc', rw = false) =>
      (d: Record<string, any>) => {
        d.Mounts = [
          { Type: 'volume', Name: 'ca-sbx_repo-abc', Source: '/v', Destination: '/work/repo', RW: true },
          { Type: 'volume', Name: raw, Source: '/v2', Destination: RAW_REPO_DIR, RW: rw },
        ];
      };
    const withView = (view: RepoViewFacts) => ({ ...expected, repoView: view }) as typeof expected;
    expect(failedIds(viewed(), withView(facts()))).toEqual([]);
    // Another lower (the host's /), a foreign volume beside, written through, not read at all.
    const hostLower = { ...derived.driverOpts, o: 'lowerdir=/,upperdir=/u,workdir=/w' };
    expect(failedIds(viewed(), withView(facts({ options: hostLower })))).toEqual([
      'volume-only-at-repo',
      'repo-view',
    ]);
    expect(
      failedIds(viewed(), withView(facts({ raw: { mounted: 'x', own: false, readOnly: true } }))),
    ).toContain('repo-view');
    expect(
      failedIds(
        viewed('ca-sbx-abc', true),
        withView(facts({ raw: { mounted: 'ca-sbx-abc', own: true, readOnly: false } })),
      ),
    ).toContain('repo-view');
    expect(failedIds(viewed())).toEqual(['volume-only-at-repo', 'repo-view']);
    // The view without its volume beside (nothing for the report and cp to read): refused.
    const alone = (d: Record<string, any>) => {
      d.Mounts = [
        { Type: 'volume', Name: 'ca-sbx_repo-abc', Source: '/v', Destination: '/work/repo', RW: true },
      ];
    };
    expect(failedIds(alone)).toEqual(['repo-view']);
    // A gateway never has one.
    const gateway = {
      ...withView(facts()),
      forbidVolumes: true,
      requireRepoVolume: false,
    } as typeof expected;
    expect(failedIds(viewed(), gateway)).toEqual(['volume-only-at-repo', 'repo-view']);
    // A box without a view has its own volume at /work/repo, by name: another sandbox's volume or
    // one of its own views there is refused (a helper may mount others: the report's listers).
    const at = (name: string, role: string) => (d: Record<string, any>) => {
      d.Config.Labels['ca.sandbox.role'] = role;
      d.Mounts = [{ Type: 'volume', Name: name, Source: '/v', Destination: '/work/repo', RW: true }];
    };
    expect(failedIds(at('ca-sbx-abc', 'box'))).toEqual([]);
    expect(failedIds(at('ca-sbx-other', 'box'))).toEqual(['repo-view']);
    expect(failedIds(at('ca-sbx_view-abc', 'box'))).toEqual(['repo-view']);
    expect(failedIds(at('ca-sbx_upper-abc', 'helper'))).toEqual([]);
  });

  it('lets only the gateway keep a log (its egress record)', () => {
    const logging = (d: Record<string, any>) => (d.HostConfig.LogConfig = { Type: 'json-file', Config: {} });
    expect(failedIds(logging, { ...expected, keepsLog: true } as typeof expected)).toEqual([]);
    expect(failedIds(logging)).toEqual(['no-host-log']);
  });

  it('numbers every row after a CIS Docker Benchmark check', () => {
    const report = verifyIsolation(parseContainerInspect(goodInspect()), expected);
    for (const check of report.checks) expect(check.cis).toMatch(/^(\d+\.\d+|-)$/);
    expect(new Set(report.checks.map((c) => c.id)).size).toBe(report.checks.length);
  });

  it.each<[string, string, (doc: Record<string, any>) => void]>([
    ['an image entrypoint', 'own-main-process', (d) => (d.Config.Entrypoint = ['docker-entrypoint.sh'])],
    ['a command looked up on the PATH', 'own-main-process', (d) => (d.Config.Cmd = ['sleep', 'infinity'])],
    ['no command at all', 'own-main-process', (d) => (d.Config.Cmd = null)],
    ['a bind in Binds', 'no-host-mounts', (d) => (d.HostConfig.Binds = ['/etc:/host-etc'])],
    [
      'a bind in Mounts',
      'no-host-mounts',
      (d) => d.Mounts.push({ Type: 'bind', Source: '/', Destination: '/host' }),
    ],
    ['volumes-from', 'no-host-mounts', (d) => (d.HostConfig.VolumesFrom = ['other'])],
    [
      'the docker socket',
      'no-docker-socket',
      (d) => d.Mounts.push({ Type: 'volume', Name: 'x', Destination: '/var/run/docker.sock' }),
    ],
    ['a volume over another dir', 'volume-only-at-repo', (d) => (d.Mounts[0].Destination = '/deps')],
    ['no source volume', 'volume-only-at-repo', (d) => (d.Mounts = [])],
    ['privileged', 'not-privileged', (d) => (d.HostConfig.Privileged = true)],
    [
      'a json-file log on the host',
      'no-host-log',
      (d) => (d.HostConfig.LogConfig = { Type: 'json-file', Config: {} }),
    ],
    ['no LogConfig (the daemon default)', 'no-host-log', (d) => delete d.HostConfig.LogConfig],
    ['CapDrop empty', 'cap-drop-all', (d) => (d.HostConfig.CapDrop = [])],
    ['a CapAdd', 'cap-drop-all', (d) => (d.HostConfig.CapAdd = ['SYS_ADMIN'])],
    ['a writable root', 'read-only-rootfs', (d) => (d.HostConfig.ReadonlyRootfs = false)],
    ['root user', 'non-root-user', (d) => (d.Config.User = '')],
    ['user 0', 'non-root-user', (d) => (d.Config.User = '0:0')],
    ['no no-new-privileges', 'no-new-privileges', (d) => (d.HostConfig.SecurityOpt = [])],
    ['no pids limit', 'pids-limit', (d) => (d.HostConfig.PidsLimit = 0)],
    ['pids limit -1', 'pids-limit', (d) => (d.HostConfig.PidsLimit = -1)],
    ['no memory limit', 'memory-limit', (d) => (d.HostConfig.Memory = 0)],
    ['swap above memory', 'memory-limit', (d) => (d.HostConfig.MemorySwap = -1)],
    ['no cpu limit', 'cpu-limit', (d) => (d.HostConfig.NanoCpus = 0)],
    [
      'a port binding',
      'no-published-ports',
      (d) => (d.HostConfig.PortBindings = { '22/tcp': [{ HostPort: '2222' }] }),
    ],
    ['publish all', 'no-published-ports', (d) => (d.HostConfig.PublishAllPorts = true)],
    ['host network', 'no-host-network', (d) => (d.HostConfig.NetworkMode = 'host')],
    ['host pid', 'no-host-pid', (d) => (d.HostConfig.PidMode = 'host')],
    ['another container pid', 'no-host-pid', (d) => (d.HostConfig.PidMode = 'container:abc')],
    ['host ipc', 'no-host-ipc', (d) => (d.HostConfig.IpcMode = 'host')],
    ['host uts', 'no-host-uts', (d) => (d.HostConfig.UTSMode = 'host')],
    ['host userns', 'no-host-userns', (d) => (d.HostConfig.UsernsMode = 'host')],
    ['a device', 'no-devices', (d) => (d.HostConfig.Devices = [{ PathOnHost: '/dev/kvm' }])],
    ['a GPU request', 'no-devices', (d) => (d.HostConfig.DeviceRequests = [{ Count: -1 }])],
    ['seccomp unconfined', 'seccomp-confined', (d) => d.HostConfig.SecurityOpt.push('seccomp=unconfined')],
    ['apparmor unconfined', 'apparmor-confined', (d) => d.HostConfig.SecurityOpt.push('apparmor:unconfined')],
    [
      'a proxy with credentials',
      'no-proxy-env',
      (d) => d.Config.Env.push('HTTP_PROXY=http://user:secret@proxy.invalid:3128'),
    ],
    ['a lower-case proxy', 'no-proxy-env', (d) => d.Config.Env.push('https_proxy=http://p:1')],
    ['ALL_PROXY', 'no-proxy-env', (d) => d.Config.Env.push('ALL_PROXY=socks5://p:1')],
    ['another network', 'network-policy', (d) => (d.HostConfig.NetworkMode = 'bridge')],
    ['another runtime', 'runtime', (d) => (d.HostConfig.Runtime = 'runsc')],
    ['a missing label', 'labeled', (d) => delete d.Config.Labels['ca.sandbox']],
    ['a foreign id', 'labeled', (d) => (d.Config.Labels['ca.sandbox.id'] = 'other')],
  ])('fails on %s', (_name, id, mutate) => {
    // Some tamperings break two invariants at once (host network is also the wrong network).
    expect(failedIds(mutate)).toContain(id);
  });

  it('lists every failed check at once', () => {
    const ids = failedIds((d) => {
      d.HostConfig.Privileged = true;
      d.HostConfig.ReadonlyRootfs = false;
      d.Config.User = 'root';
    });
    expect(ids).toEqual(['not-privileged', 'read-only-rootfs', 'non-root-user']);
  });

  it('refuses a box that may dump core or has no file size cap (the rows the install checks too)', () => {
    expect(
      failedIds((d) => {
        d.HostConfig.Ulimits = [{ Name: 'core', Soft: -1, Hard: -1 }];
      }),
    ).toEqual(['no-core-dumps', 'file-size-limit']);
    expect(
      failedIds((d) => {
        d.HostConfig.Ulimits = null;
      }),
    ).toEqual(['no-core-dumps', 'file-size-limit']);
  });

  it('names a leaked proxy variable without its value (it may hold credentials)', () => {
    const doc = goodInspect();
    doc.Config.Env.push('HTTP_PROXY=http://user:secret@proxy.invalid:3128');
    const row = verifyIsolation(parseContainerInspect(doc), expected).checks.find(
      (c) => c.id === 'no-proxy-env',
    );
    expect(row).toMatchObject({ pass: false, seen: 'set: HTTP_PROXY' });
    expect(JSON.stringify(row)).not.toContain('secret');
  });

  it('passes blank proxy variables and the ones the caller allowed by name', () => {
    const doc = goodInspect();
    doc.Config.Env.push('HTTP_PROXY=', 'no_proxy=', 'HTTPS_PROXY=http://proxy.local:3128');
    const inspect = parseContainerInspect(doc);
    const allowed = verifyIsolation(inspect, { ...expected, allowedEnv: ['HTTPS_PROXY'] });
    expect(allowed.checks.find((c) => c.id === 'no-proxy-env')?.pass).toBe(true);
    // Allowing https_proxy does not allow HTTPS_PROXY: names are exact, as the CLI sets them.
    const other = verifyIsolation(inspect, { ...expected, allowedEnv: ['https_proxy'] });
    expect(other.checks.find((c) => c.id === 'no-proxy-env')).toMatchObject({
      pass: false,
      seen: 'set: HTTPS_PROXY',
    });
  });
});

describe('daemon-wide rows', () => {
  const rows = (daemonSecurityOptions?: string[]) =>
    verifyIsolation(parseContainerInspect(goodInspect()), { ...expected, daemonSecurityOptions }).checks;
  const row = (id: string, options?: string[]) => rows(options).find((check) => check.id === id);

  it.each([
    [['name=seccomp,profile=default'], 'profile=default'],
    [['name=apparmor', 'name=seccomp,profile=builtin', 'name=cgroupns'], 'profile=builtin'],
    [['name=seccomp,profile=/etc/docker/seccomp.json'], 'profile=/etc/docker/seccomp.json'],
  ])('passes a daemon whose seccomp confines: %j', (options, seen) => {
    expect(row('daemon-seccomp', options)).toMatchObject({ cis: '5.21', pass: true, seen });
  });

  it.each([
    [['name=seccomp,profile=unconfined'], 'profile=unconfined'],
    [['name=apparmor', 'name=seccomp,profile=Unconfined'], 'profile=Unconfined'],
    [[], 'seccomp not available'],
    [['name=apparmor', 'name=userns'], 'seccomp not available'],
  ])('fails a daemon with seccomp off or unconfined: %j', (options, seen) => {
    expect(row('daemon-seccomp', options)).toMatchObject({ pass: false, seen });
    expect(verifyDaemon(options).map((check) => [check.id, check.pass])).toEqual([['daemon-seccomp', false]]);
  });

  it('passes with seen unknown when the caller did not read the daemon options', () => {
    expect(row('daemon-seccomp')).toMatchObject({ pass: true, seen: 'unknown (daemon options not read)' });
  });

  it('says AppArmor is not available on a host without it, without failing', () => {
    expect(row('apparmor-confined', ['name=seccomp,profile=default'])).toMatchObject({
      pass: true,
      seen: 'not available on this host',
    });
    expect(row('apparmor-confined', ['name=apparmor', 'name=seccomp,profile=default'])?.seen).toBe('default');
  });
});
