import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { appendFile, chmod, mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { dockerInfo, IMAGE_VIEW_DIR, imageExists, inspectContainer, sandboxLabels } from '@ca-sandbox/docker';
import { docker } from '@ca-sandbox/docker/cli';
import {
  applyAllowlist,
  createSandboxNetwork,
  listFirewallRules,
  parseAllowEntries,
  removeFirewallRules,
} from '@ca-sandbox/network';
import { IsolationViolationError } from '@ca-sandbox/run';
import { GenericContainer, type StartedTestContainer, Wait } from 'testcontainers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// An internal of the network package (not on its barrel): how its own rule listing is read.
import { parseRuleListing } from '../../network/dist/firewall-rules.js';
import {
  destroyAll,
  hostAddress,
  labeledObjects,
  makeGitRepo,
  removeDir,
  tempDir,
  uniqueId,
} from '../test/helpers.js';
import { cleanupCreate, createSandbox, type PhaseEvent } from './create/index.js';
import {
  CreateCleanupError,
  InvalidSandboxIdError,
  InvalidSourceError,
  SandboxExistsError,
} from './errors.js';
import { execInSandbox } from './exec.js';
import { listSandboxes, verifySandbox } from './list.js';
import { LABEL_INSTANCE } from './record.js';
import { destroySandbox } from './teardown.js';

const HELPER = 'ca-sbx-base:git';
const ready = await imageExists(HELPER).catch(() => false);
const created = new Set<string>();
const hasRunsc = (await dockerInfo().catch(() => ({ runtimes: [] as string[] }))).runtimes.includes('runsc');
const isRoot = process.getuid?.() === 0;
let work: string;

beforeAll(async () => {
  work = await tempDir();
});
afterAll(async () => {
  await destroyAll(created);
  await removeDir(work);
});

async function sh(id: string, script: string) {
  return execInSandbox(id, ['sh', '-c', script]);
}

describe.skipIf(!ready)('createSandbox from a local directory', () => {
  it('clones a local git repo with --no-local: .git present, files owned by 1000, box writable and offline', async () => {
    const repo = await makeGitRepo(join(work, 'local-git'), {
      'README.md': '# hi\n',
      'src/main.sh': 'echo hi\n',
    });
    const id = uniqueId(created);
    const phases: string[] = [];
    const record = await createSandbox(
      { source: repo, name: id },
      { onPhase: (event) => phases.push(`${event.phase}:${event.status}`) },
    );
    expect(record).toMatchObject({
      id,
      container: `ca-sbx-${id}`,
      volume: `ca-sbx-${id}`,
      network: 'offline',
      runtime: 'runc',
      repo: 'local-git',
      source: repo,
      status: 'running',
    });
    expect(phases).toEqual([
      'preflight:start',
      'preflight:done',
      'clone:start',
      'clone:done',
      'dephash:start',
      'dephash:done',
      'build:start',
      'build:done',
      'run:start',
      'run:done',
      'verify:start',
      'verify:done',
    ]);
    const check = await sh(
      id,
      'stat -c "%u:%g %n" README.md src/main.sh .git; git log --oneline 2>/dev/null | wc -l; git remote; touch new-file && echo writable',
    );
    // The box image (plain provider) may lack git; ownership and writability are what matter.
    expect(check.stdout).toContain('1000:1000 README.md');
    expect(check.stdout).toContain('1000:1000 .git');
    expect(check.stdout).toContain('writable');
    expect((await listSandboxes()).map((sandbox) => sandbox.id)).toContain(id);
    const report = await verifySandbox(id);
    expect(report.ok).toBe(true);
    const inspect = await inspectContainer(`ca-sbx-${id}`);
    expect(inspect.HostConfig.NetworkMode).toBe('none');
    expect(inspect.Config.Labels).toMatchObject({
      'ca.sandbox': '1',
      'ca.sandbox.id': id,
      'ca.sandbox.repo': 'local-git',
      'ca.sandbox.policy': 'offline',
    });
    expect(inspect.Config.Labels['ca.sandbox.created']).toMatch(/^\d{4}-\d\d-\d\dT/);
  });

  it('lists a box whose helper is still there as creating, then incomplete (a create killed with its box started beside the clone)', async () => {
    const dir = join(work, 'killed-beside');
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, 'a.txt'), 'a');
    const id = uniqueId(created);
    await createSandbox({ source: dir, name: id });
    expect((await listSandboxes()).find((sandbox) => sandbox.id === id)?.status).toBe('running');
    // What a SIGKILL leaves when the box started beside the clone: the box and the create's helper.
    const helper = `ca-sbx_helper-${id}`;
    await docker([
      'run',
      '--detach',
      '--name',
      helper,
      ...Object.entries({ ...sandboxLabels(id), 'ca.sandbox.role': 'helper' }).flatMap(([k, v]) => [
        '--label',
        `${k}=${v}`,
      ]),
      HELPER,
      '/bin/sleep',
      '60',
    ]);
    expect((await listSandboxes()).find((sandbox) => sandbox.id === id)?.status).toBe('creating');
    await docker(['stop', '--time', '0', helper]);
    expect((await listSandboxes()).find((sandbox) => sandbox.id === id)?.status).toBe('incomplete');
    await destroySandbox(id);
    created.delete(id);
    expect((await listSandboxes()).some((sandbox) => sandbox.id === id)).toBe(false);
  });

  it('copies a plain directory (no .git) straight into /work/repo', async () => {
    const dir = join(work, 'plain');
    await mkdir(join(dir, 'sub'), { recursive: true });
    await writeFile(join(dir, 'sub', 'x.txt'), 'plain file');
    await writeFile(join(dir, 'run.sh'), '#!/bin/sh\necho ran\n');
    await chmod(join(dir, 'run.sh'), 0o755);
    const id = uniqueId(created);
    await createSandbox({ source: dir, name: id });
    const out = await sh(id, 'cat sub/x.txt; ./run.sh; stat -c %u run.sh');
    expect(out.stdout).toBe('plain fileran\n1000\n');
  });

  it('a local repo whose .git/config sets core.fsmonitor (and a hook) runs nothing on the host', async () => {
    const repo = await makeGitRepo(join(work, 'fsmonitor'), { 'a.txt': 'a' });
    const sentinel = join(work, 'fsmonitor-ran');
    // Written after the fixture commit, without git: any git on this repo would now run it.
    await appendFile(
      join(repo, '.git', 'config'),
      `[core]\n\tfsmonitor = "touch ${sentinel}; echo"\n\tsshCommand = touch ${sentinel}\n[alias]\n\tstatus = !touch ${sentinel}\n`,
    );
    await writeFile(
      join(repo, '.git', 'hooks', 'post-checkout'),
      `#!/bin/sh\ntouch ${sentinel}\ntouch /work/repo/hook-ran\n`,
    );
    await chmod(join(repo, '.git', 'hooks', 'post-checkout'), 0o755);
    const id = uniqueId(created);
    await createSandbox({ source: repo, name: id });
    expect(existsSync(sentinel)).toBe(false);
    const box = await sh(id, 'ls -A; cat .git/config');
    expect(box.stdout).toContain('a.txt');
    expect(box.stdout).not.toContain('hook-ran');
    expect(box.stdout).not.toContain('fsmonitor');
  });

  it('a symlink to a host secret arrives as a dangling link, never the secret', async () => {
    const secret = join(work, 'host-secret.txt');
    await writeFile(secret, 'TOP-SECRET-HOST-DATA');
    const dir = join(work, 'leaky');
    await mkdir(dir, { recursive: true });
    await symlink(secret, join(dir, 'leak'));
    await symlink('/etc/shadow', join(dir, 'shadow'));
    const repo = await makeGitRepo(dir, { 'ok.txt': 'ok' });
    const plain = join(work, 'leaky-plain');
    await mkdir(plain, { recursive: true });
    await symlink(secret, join(plain, 'leak'));
    for (const source of [repo, plain]) {
      const id = uniqueId(created);
      await createSandbox({ source, name: id });
      const out = await sh(
        id,
        'readlink leak; cat leak; test -L leak && echo is-link; grep -r TOP-SECRET . ; true',
      );
      expect(out.stdout).toContain(secret);
      expect(out.stdout).toContain('is-link');
      expect(out.stdout + out.stderr).not.toContain('TOP-SECRET-HOST-DATA');
      expect(out.stderr).toMatch(/No such file/);
    }
  });
});

describe.skipIf(!ready)('createSandbox refuses bad input before anything runs', () => {
  const sentinelOf = (name: string) => join(work, `sentinel-${name}`);
  const cases: [string, (s: string) => string][] = [
    ['ext', (s) => `ext::sh -c touch% ${s}`],
    ['option', (s) => `--upload-pack=touch ${s}`],
    ['ssh-host', (s) => `ssh://-oProxyCommand=touch%20${s}/repo`],
    ['scp-option', (s) => `-oProxyCommand=touch ${s}@host:path`],
    ['fd', () => 'fd::7'],
    ['file', () => 'file:///etc'],
    ['control', (s) => `https://example.com/x\n${s}`],
  ];
  for (const [name, make] of cases) {
    it(`${name}`, async () => {
      const sentinel = sentinelOf(name);
      const id = uniqueId(created);
      const error = await createSandbox({ source: make(sentinel), name: id }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InvalidSourceError);
      expect(error).toMatchObject({ kind: 'usage' });
      expect(existsSync(sentinel)).toBe(false);
      expect(await labeledObjects(id)).toEqual([]);
    });
  }

  it('a bad name, and a duplicate name with a clear error', async () => {
    const repo = await makeGitRepo(join(work, 'dup'), { 'a.txt': 'a' });
    await expect(createSandbox({ source: repo, name: 'Bad Name' })).rejects.toBeInstanceOf(
      InvalidSandboxIdError,
    );
    const id = uniqueId(created);
    await createSandbox({ source: repo, name: id });
    const error = await createSandbox({ source: repo, name: id }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SandboxExistsError);
    expect((error as Error).message).toBe(
      `a sandbox named '${id}' already exists: pick another --name or destroy it first`,
    );
    // The first sandbox is untouched by the refused second create.
    expect((await inspectContainer(`ca-sbx-${id}`)).State.Running).toBe(true);
  });
});

describe.skipIf(!ready)('createSandbox from a git server (git daemon in a container)', () => {
  let server: StartedTestContainer;
  let host: string;
  /** The daemon as a real git host: published on this host's address, reached through the gateway. */
  let published: string;
  let commit: string;

  beforeAll(async () => {
    const script = [
      'set -e',
      'export HOME=/tmp GIT_CONFIG_NOSYSTEM=1',
      'mkdir -p /tmp/srv/git /tmp/w && cd /tmp/w',
      'git init -q -b main && git config user.email t@e && git config user.name t',
      'echo first > file.txt && git add . && git commit -qm first',
      'git tag v1',
      'echo second > file.txt && git commit -qam second',
      'git checkout -q -b feature && echo feature > feature.txt && git add . && git commit -qm feature && git checkout -q main',
      'git clone -q --bare /tmp/w /tmp/srv/git/repo.git',
      'exec git daemon --verbose --reuseaddr --base-path=/tmp/srv/git --export-all --enable=receive-pack --listen=0.0.0.0 --port=9418',
    ].join('\n');
    server = await new GenericContainer(HELPER)
      .withUser('1000:1000')
      .withLabels({ 'ca.lifecycle.test': 'git-server' })
      .withCommand(['sh', '-c', script])
      .withExposedPorts(9418)
      .withWaitStrategy(Wait.forLogMessage(/Ready to rumble/))
      .start();
    host = server.getIpAddress('bridge');
    published = `${hostAddress()}:${server.getMappedPort(9418)}`;
    const rev = await server.exec(['git', '-C', '/tmp/srv/git/repo.git', 'rev-parse', 'v1^{commit}'], {
      user: '1000:1000',
    });
    commit = rev.output.trim();
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('clones over git:// (shallow, default branch) through the bridge', async () => {
    const id = uniqueId(created);
    const record = await createSandbox({
      source: `git://${host}:9418/repo.git`,
      name: id,
      cloneNetwork: 'bridge',
    });
    expect(record).toMatchObject({ repo: 'repo', source: `git://${host}:9418/repo.git`, network: 'offline' });
    const out = await sh(id, 'cat file.txt; ls; cat .git/shallow >/dev/null && echo shallow');
    expect(out.stdout).toBe('second\nfile.txt\nshallow\n');
    // The box itself is offline even though the clone used the bridge, and the helper is gone.
    expect((await inspectContainer(`ca-sbx-${id}`)).HostConfig.NetworkMode).toBe('none');
    expect(await labeledObjects(id)).toEqual([`container:ca-sbx-${id}`, `volume:ca-sbx-${id}`]);
  });

  it('clones a branch with --ref', async () => {
    const id = uniqueId(created);
    await createSandbox({ source: `git://${published}/repo.git`, name: id, ref: 'feature' });
    expect((await sh(id, 'cat feature.txt')).stdout).toBe('feature\n');
  });

  it('checks out a commit sha with --ref', async () => {
    expect(commit).toMatch(/^[0-9a-f]{40}$/);
    const id = uniqueId(created);
    await createSandbox({ source: `git://${published}/repo.git`, name: id, ref: commit });
    expect((await sh(id, 'cat file.txt')).stdout).toBe('first\n');
  });

  it('a clone that fails removes everything it made', async () => {
    const id = uniqueId(created);
    await expect(createSandbox({ source: `git://${published}/missing.git`, name: id })).rejects.toThrow(
      /git clone failed in the helper/,
    );
    expect(await labeledObjects(id)).toEqual([]);
  });
});

const hasPython = await imageExists('ca-sbx-base:python').catch(() => false);

describe.skipIf(!ready || !hasPython)('createSandbox from an http URL carrying a token', () => {
  let server: StartedTestContainer;
  let host: string;
  let port: number;
  const token = 'ghp_lcTestT0ken123';

  beforeAll(async () => {
    // Smart http through git-http-backend as a CGI of python's http.server (a shallow clone needs
    // the smart protocol); the repo is made inside the server container, as for the git daemon.
    const script = [
      'set -e',
      'export HOME=/tmp GIT_CONFIG_NOSYSTEM=1',
      'mkdir -p /tmp/srv/cgi-bin /tmp/git /tmp/w && cd /tmp/w',
      'git init -q -b main && git config user.email t@e && git config user.name t',
      'printf "over http\\n" > file.txt && git add . && git commit -qm first',
      'git clone -q --bare /tmp/w /tmp/git/repo.git',
      'printf "#!/bin/sh\\nexec /usr/lib/git-core/git-http-backend\\n" > /tmp/srv/cgi-bin/git',
      'chmod +x /tmp/srv/cgi-bin/git',
      'export GIT_PROJECT_ROOT=/tmp/git GIT_HTTP_EXPORT_ALL=1',
      'cd /tmp/srv && exec python3 -u -m http.server --cgi 8000',
    ].join('\n');
    server = await new GenericContainer('ca-sbx-base:python')
      .withUser('1000:1000')
      .withLabels({ 'ca.lifecycle.test': 'http-server' })
      .withCommand(['sh', '-c', script])
      .withExposedPorts(8000)
      .withWaitStrategy(Wait.forLogMessage(/Serving HTTP/))
      .start();
    // Published on this host's address: the clone goes through the egress gateway to it.
    host = hostAddress();
    port = server.getMappedPort(8000);
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('the token reaches neither the box (origin, FETCH_HEAD, reflogs) nor the labels', async () => {
    const id = uniqueId(created);
    const record = await createSandbox({
      source: `http://${token}@${host}:${port}/cgi-bin/git/repo.git`,
      name: id,
    });
    expect(record.source).toBe(`http://***@${host}:${port}/cgi-bin/git/repo.git`);
    expect((await sh(id, 'cat file.txt; grep url .git/config')).stdout).toBe(
      `over http\n\turl = http://${host}:${port}/cgi-bin/git/repo.git\n`,
    );
    const grep = await sh(id, `grep -rl -- '${token}' /work/repo/.git; echo "exit $?"`);
    expect(grep.stdout).toBe('exit 1\n');
    const labels = (await inspectContainer(`ca-sbx-${id}`)).Config.Labels;
    expect(JSON.stringify(labels)).not.toContain(token);
    expect(JSON.stringify(await listSandboxes())).not.toContain(token);
  });

  it('a commit checkout with a user:password URL keeps neither', async () => {
    const id = uniqueId(created);
    const head = (await server.exec(['git', '-C', '/tmp/git/repo.git', 'rev-parse', 'main'])).output.trim();
    expect(head).toMatch(/^[0-9a-f]{40}$/);
    await createSandbox({
      source: `http://lcuser9:${token}@${host}:${port}/cgi-bin/git/repo.git`,
      name: id,
      ref: head,
    });
    const grep = await sh(id, `grep -rl -e '${token}' -e 'lcuser9' /work/repo/.git; echo "exit $?"`);
    expect(grep.stdout).toBe('exit 1\n');
    expect((await sh(id, 'grep url .git/config')).stdout).toBe(
      `\turl = http://${host}:${port}/cgi-bin/git/repo.git\n`,
    );
  });

  it('a failed clone does not echo the token in its error', async () => {
    const id = uniqueId(created);
    const error = await createSandbox({
      source: `http://${token}@${host}:1/repo.git`,
      name: id,
    }).then(
      () => new Error('the clone succeeded'),
      (caught: unknown) => caught as Error,
    );
    expect(error.message).toMatch(/git clone failed/);
    expect(error.message).not.toContain(token);
    expect(await labeledObjects(id)).toEqual([]);
  });
});

describe.skipIf(!ready)('policies and runtimes', () => {
  it('clone-then-cut: the box runs with --network none', async () => {
    const repo = await makeGitRepo(join(work, 'ctc'), { 'a.txt': 'a' });
    const id = uniqueId(created);
    const record = await createSandbox({ source: repo, name: id, network: 'clone-then-cut' });
    expect(record.network).toBe('clone-then-cut');
    expect((await inspectContainer(`ca-sbx-${id}`)).HostConfig.NetworkMode).toBe('none');
  });

  it.skipIf(!hasRunsc)('runtime runsc (gVisor) for an offline box', async () => {
    const repo = await makeGitRepo(join(work, 'runsc'), { 'a.txt': 'gvisor' });
    const id = uniqueId(created);
    const record = await createSandbox({ source: repo, name: id, runtime: 'runsc' });
    expect(record.runtime).toBe('runsc');
    expect((await inspectContainer(`ca-sbx-${id}`)).HostConfig.Runtime).toBe('runsc');
    expect((await sh(id, 'cat a.txt')).stdout).toBe('gvisor');
    expect((await verifySandbox(id)).ok).toBe(true);
  });

  it.skipIf(!isRoot)(
    'allowlist: a per-sandbox network and tagged rules, all removed by destroy',
    async () => {
      const repo = await makeGitRepo(join(work, 'allow'), { 'a.txt': 'a' });
      const id = uniqueId(created);
      const phases: PhaseEvent[] = [];
      const record = await createSandbox(
        { source: repo, name: id, network: 'allowlist', allow: ['203.0.113.7'] },
        { onPhase: (event) => phases.push(event) },
      );
      expect(record.network).toBe('allowlist');
      // Create's own gate counted the exact-rule-set row: as many passed checks as verify has rows.
      const gate = phases.find((event) => event.phase === 'verify' && event.status === 'done');
      const rows = (await verifySandbox(id)).checks;
      expect(rows.map((check) => check.id)).toContain('allowlist-firewall');
      expect(gate?.detail).toBe(`${rows.length} isolation checks passed`);
      const inspect = await inspectContainer(`ca-sbx-${id}`);
      expect(inspect.HostConfig.NetworkMode).toBe(`ca-sbx-${id}`);
      // Docker's embedded resolver forwards to the box's own loopback: no name resolves through the host.
      const dns = await docker([
        'container',
        'inspect',
        '--format',
        '{{json .HostConfig.Dns}}',
        `ca-sbx-${id}`,
      ]);
      expect(JSON.parse(dns.stdout)).toEqual(['127.0.0.1']);
      expect((await listFirewallRules()).filter((rule) => rule.sandboxId === id).length).toBeGreaterThan(0);
      const report = await verifySandbox(id);
      expect(report.checks.find((check) => check.id === 'allowlist-firewall')).toMatchObject({ pass: true });
      expect(report.ok).toBe(true);
      // Rules gone (a host reboot, `iptables -F`) while the box runs: verify must fail closed.
      await removeFirewallRules(id);
      const open = await verifySandbox(id);
      expect(open.ok).toBe(false);
      expect(open.checks.filter((check) => !check.pass).map((check) => check.id)).toEqual([
        'allowlist-firewall',
      ]);
      const result = await destroySandbox(id);
      expect(result.failures).toEqual([]);
      expect(result.leftovers).toEqual([]);
      expect(result.removed).toEqual(
        expect.arrayContaining([`container:ca-sbx-${id}`, `volume:ca-sbx-${id}`, `network:ca-sbx-${id}`]),
      );
      expect((await listFirewallRules()).filter((rule) => rule.sandboxId === id)).toEqual([]);
      expect(await labeledObjects(id)).toEqual([]);
    },
  );

  it.skipIf(!isRoot)(
    'allowlist: a rule removed between apply and `docker run` (a prune beside it) fails the gate; the box is removed',
    async () => {
      const repo = await makeGitRepo(join(work, 'allow-tamper'), { 'a.txt': 'a' });
      const id = uniqueId(created);
      let tampered = '';
      // 'verify' starts right after `docker run` returned, before the gate: delete one of the id's
      // rules synchronously there, as a concurrent sweep would have.
      const onPhase = (event: PhaseEvent) => {
        if (event.phase !== 'verify' || event.status !== 'start') return;
        const listing = execFileSync('iptables', ['-w', '10', '-S'], { encoding: 'utf8' });
        const rule = parseRuleListing(listing, 4).find((one) => one.sandboxId === id);
        if (!rule) return;
        const words = rule.rule.replaceAll('"', '').split(' ');
        execFileSync('iptables', ['-w', '10', '-D', ...words.slice(1)]);
        tampered = rule.rule;
      };
      const error = await createSandbox(
        { source: repo, name: id, network: 'allowlist', allow: ['203.0.113.7'] },
        { onPhase },
      ).catch((caught: unknown) => caught);
      expect(tampered).not.toBe('');
      expect(error).toBeInstanceOf(IsolationViolationError);
      expect((error as IsolationViolationError).failures.map((check) => check.id)).toEqual([
        'allowlist-firewall',
      ]);
      expect(await labeledObjects(id)).toEqual([]);
      expect((await listFirewallRules()).filter((rule) => rule.sandboxId === id)).toEqual([]);
    },
  );

  it.skipIf(!isRoot)(
    'a create refused as a duplicate leaves the existing allowlist box its rules',
    async () => {
      const repo = await makeGitRepo(join(work, 'allow-dup'), { 'a.txt': 'a' });
      const id = uniqueId(created);
      await createSandbox({ source: repo, name: id, network: 'allowlist', allow: ['203.0.113.11'] });
      const before = (await listFirewallRules()).filter((rule) => rule.sandboxId === id);
      expect(before.length).toBeGreaterThan(0);
      await expect(
        createSandbox({ source: repo, name: id, network: 'allowlist', allow: ['203.0.113.12'] }),
      ).rejects.toBeInstanceOf(SandboxExistsError);
      expect((await listFirewallRules()).filter((rule) => rule.sandboxId === id)).toEqual(before);
      expect((await verifySandbox(id)).ok).toBe(true);
    },
  );

  it.skipIf(!isRoot)(
    'a failed create whose network cannot be removed keeps the rules and names the leftovers',
    async () => {
      const id = uniqueId(created);
      const instance = randomBytes(8).toString('hex');
      const net = await createSandboxNetwork(id, sandboxLabels(id, { [LABEL_INSTANCE]: instance }));
      await applyAllowlist(id, net, parseAllowEntries(['203.0.113.13']));
      const holder = `lc-cleanupholder-${id}`;
      // An unlabeled container of the test on the network: `docker network rm` fails, like a box
      // whose `docker rm` failed would keep it.
      await docker([
        'run',
        '-d',
        '--name',
        holder,
        '--network',
        net.name,
        'ca-sbx-base:debian',
        'sleep',
        '300',
      ]);
      try {
        expect(await cleanupCreate(id, instance, true)).toEqual([
          `network:${net.name}`,
          `firewall:ca-sandbox:${id}`,
        ]);
        expect((await listFirewallRules()).filter((rule) => rule.sandboxId === id).length).toBeGreaterThan(0);
      } finally {
        await docker(['rm', '-f', holder], { allowFailure: true });
      }
      expect(await cleanupCreate(id, instance, true)).toEqual([]);
      expect((await listFirewallRules()).filter((rule) => rule.sandboxId === id)).toEqual([]);
      expect(await labeledObjects(id)).toEqual([]);
    },
  );

  it('CreateCleanupError keeps the create error and names what is left', () => {
    const error = new CreateCleanupError('sbx-x', new Error('the box failed a check'), [
      'container:ca-sbx-sbx-x',
      'firewall:ca-sandbox:sbx-x',
    ]);
    expect(error).toMatchObject({ code: 'CREATE_CLEANUP_INCOMPLETE', kind: 'failure' });
    expect(error.message).toBe(
      'the box failed a check; the cleanup after it left container:ca-sbx-sbx-x, firewall:ca-sandbox:sbx-x',
    );
    expect(error.hint).toContain('destroy sbx-x');
  });

  it.skipIf(!isRoot)('allowlist: rules stay while the network is still held, then go', async () => {
    const repo = await makeGitRepo(join(work, 'allow-held'), { 'a.txt': 'a' });
    const id = uniqueId(created);
    await createSandbox({ source: repo, name: id, network: 'allowlist', allow: ['203.0.113.8'] });
    const holder = `lc-netholder-${id}`;
    // A container of the test (unlabeled) on the sandbox network keeps it in use.
    await docker([
      'run',
      '-d',
      '--name',
      holder,
      '--network',
      `ca-sbx-${id}`,
      'ca-sbx-base:debian',
      'sleep',
      '300',
    ]);
    try {
      const first = await destroySandbox(id);
      expect(first.failures).toMatchObject([{ kind: 'network', name: `ca-sbx-${id}`, exitCode: 1 }]);
      expect(first.leftovers).toEqual([`network:ca-sbx-${id}`, `firewall:ca-sandbox:${id}`]);
      expect((await listFirewallRules()).filter((rule) => rule.sandboxId === id).length).toBeGreaterThan(0);
    } finally {
      await docker(['rm', '-f', holder], { allowFailure: true });
    }
    const second = await destroySandbox(id);
    expect(second.leftovers).toEqual([]);
    expect((await listFirewallRules()).filter((rule) => rule.sandboxId === id)).toEqual([]);
  });

  it('node repo: deps installed under clone-then-cut, a repo view; offline reuses the cached image with links', async () => {
    process.env.CA_SANDBOX_CA_CERTS ??= process.env.NODE_EXTRA_CA_CERTS;
    const dir = join(work, 'noderepo');
    await mkdir(dir, { recursive: true });
    await writeFile(
      join(dir, 'package.json'),
      JSON.stringify({
        name: 'noderepo',
        version: '1.0.0',
        type: 'module',
        dependencies: { 'is-number': '7.0.0' },
      }),
    );
    await writeFile(join(dir, 'index.js'), "import isNumber from 'is-number';\nconsole.log(isNumber(5));\n");
    const first = uniqueId(created);
    const built = await createSandbox({ source: dir, name: first, network: 'clone-then-cut' });
    expect(built).toMatchObject({ provider: 'node', image: expect.stringMatching(/^ca-sbx:noderepo-/) });
    // By default (a repo view) node_modules and the dependency are real, writable folders of the
    // project, as after npm install on a developer's machine.
    expect(
      (
        await sh(
          first,
          'test ! -L node_modules -a ! -L node_modules/is-number && touch node_modules/is-number/.probe && readlink -f node_modules/is-number; node index.js',
        )
      ).stdout,
    ).toBe('/work/repo/node_modules/is-number\ntrue\n');
    // The same image with links: node_modules is a real, writable directory of the volume whose
    // entries link into the deps, through the box's writable view of its image.
    const second = uniqueId(created);
    const reused = await createSandbox({ source: dir, name: second, depsView: 'links' });
    expect(reused).toMatchObject({ imageCacheHit: true, image: built.image, network: 'offline' });
    expect(
      (
        await sh(
          second,
          'test ! -L node_modules && touch node_modules/.probe && readlink node_modules/is-number; node index.js',
        )
      ).stdout,
    ).toBe(`${IMAGE_VIEW_DIR}/deps/src/node_modules/is-number\ntrue\n`);
  });

  it('usage errors for policy options', async () => {
    await expect(createSandbox({ source: work, network: 'allowlist' })).rejects.toThrow(
      /at least one --allow/,
    );
    await expect(createSandbox({ source: work, allow: ['10.0.0.1'] })).rejects.toThrow(
      /only for the allowlist/,
    );
    await expect(createSandbox({ source: work, network: 'wide-open' })).rejects.toThrow(
      /unknown network policy/,
    );
    await expect(createSandbox({ source: work, privileged: true } as never)).rejects.toThrow(
      /unknown option/,
    );
  });
});
