import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { LABEL_ID, LABEL_ROLE } from '@ca-sandbox/docker';
import { docker } from '@ca-sandbox/docker/cli';
import { execa } from 'execa';
import { GenericContainer, type StartedTestContainer } from 'testcontainers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  cli,
  createBox,
  destroyBox,
  destroyLeftovers,
  escapes,
  execBox,
  hostAddress,
  labeledLeft,
  parseJson,
} from './_harness.js';

/**
 * The dependency install runs code of the repo's choosing with the network on: through the egress
 * gateway it may reach its registries and nothing else. The repo's own lifecycle scripts (root and
 * workspace packages, `file:` folders: every package.json of the context) are skipped by design,
 * so the probe runs where an install really runs such code: a `.pnpmfile.cjs`, which pnpm loads in
 * its own process, and a dependency's postinstall (the package comes from a registry of the test's
 * own, configured as the npm mirror). The probe is inline node (only manifests reach the build).
 */
const PROBE = `
const net = require('net'), dns = require('dns'), fs = require('fs');
// node -e CODE WHO TARGETS [OUT] or node probe.js WHO TARGETS [OUT]; no OUT: stdout
const args = process.argv.slice(/.js$/.test(process.argv[1] || '') ? 2 : 1);
const targets = JSON.parse(args[1] || '[]');
const proxy = new URL(process.env.HTTPS_PROXY || process.env.https_proxy || 'http://0.0.0.0:1');
const out = [];
const tcp = (host, port) => new Promise((done) => {
  const s = net.connect({ host, port: Number(port) });
  const end = (r) => { s.destroy(); done(r); };
  s.setTimeout(3000, () => end('timeout'));
  s.on('connect', () => end('open')); s.on('error', (e) => end(e.code));
});
const connect = (target) => new Promise((done) => {
  const s = net.connect({ host: proxy.hostname, port: Number(proxy.port) });
  let head = '';
  s.setTimeout(8000, () => { s.destroy(); done('timeout'); });
  s.on('connect', () => s.write('CONNECT ' + target + ' HTTP/1.1\\r\\nHost: ' + target + '\\r\\n\\r\\n'));
  s.on('data', (d) => { head += d; if (head.includes('\\r\\n')) { s.destroy(); done(head.split(' ')[1]); } });
  s.on('error', (e) => done(e.code));
});
(async () => {
  for (const t of targets) {
    const [host, port] = [t.slice(0, t.lastIndexOf(':')), t.slice(t.lastIndexOf(':') + 1)];
    const direct = await tcp(host, port);
    out.push((direct === 'open' ? 'REACHED direct ' : 'BLOCKED direct ') + t + ' ' + direct);
    const via = await connect(t);
    out.push((via === '200' ? 'REACHED proxy ' : 'BLOCKED proxy ') + t + ' ' + via);
  }
  const name = await new Promise((d) => dns.lookup('example.com', (e, a) => d(e ? e.code : a)));
  out.push((/^[0-9.:a-f]+$/.test(name) ? 'RESOLVED dns ' : 'BLOCKED dns ') + name);
  out.push('off-list ' + (await connect('example.com:443')));
  out.push('registry ' + (await connect('registry.npmjs.org:443')));
  out.push('proxy ' + proxy.host);
  if (args[2]) fs.writeFileSync(args[2], out.join('\\n') + '\\n');
  else process.stdout.write(out.join('\\n') + '\\n');
})();
`;

/** Where a probe run by the install leaves its report (in the image, read back from the box). */
const report = (who: string) => `/deps/egress-${who}.txt`;

let listener: Server;
let hits = 0;
let port = 0;
let peer: StartedTestContainer;
let registry: StartedTestContainer;
let work: string;
let pnpmfileRepo: string;
let dependencyRepo: string;
let boxRepo: string;
const images = new Set<string>();
let registryUrl: string;
let targets: string[];

/**
 * The host's own addresses: docker's default bridge gateway and the host's address on its own
 * network (no other interface: the bridges of other people's sandboxes come and go).
 */
async function hostAddresses(): Promise<string[]> {
  const docker0 = networkInterfaces().docker0?.find((info) => info.family === 'IPv4')?.address;
  return [...new Set([await hostAddress(), ...(docker0 ? [docker0] : [])])];
}

/** The package a registry of our own serves: its postinstall is the probe. */
const PROBE_PACKAGE = 'ca-sbx-egress-probe';

/**
 * An npm registry of the test's own (python's http.server in a container, published on this
 * host's address, where the gateway reaches it as a configured mirror): one package, one version.
 */
async function startRegistry(): Promise<{ container: StartedTestContainer; url: string }> {
  const container = await new GenericContainer('ca-sbx-base:python')
    .withCommand(['python3', '-m', 'http.server', '--directory', '/srv', '8000'])
    .withExposedPorts(8000)
    .start();
  const url = `http://${await hostAddress()}:${container.getMappedPort(8000)}`;
  const dir = await mkdtemp(join(tmpdir(), 'ca-hostile-egress-pkg-'));
  try {
    const scripts = {
      postinstall: `node probe.js dependency '${JSON.stringify(targets)}' ${report('dependency')}`,
    };
    const manifest = { name: PROBE_PACKAGE, version: '1.0.0', scripts };
    await mkdir(join(dir, 'package'));
    await writeFile(join(dir, 'package', 'package.json'), JSON.stringify(manifest));
    await writeFile(join(dir, 'package', 'probe.js'), PROBE);
    await execa('tar', ['-czf', 'pkg.tgz', '--owner=0', '--group=0', 'package'], { cwd: dir });
    const tarball = await readFile(join(dir, 'pkg.tgz'));
    const tarballPath = `${PROBE_PACKAGE}/-/${PROBE_PACKAGE}-1.0.0.tgz`;
    const packument = {
      name: PROBE_PACKAGE,
      'dist-tags': { latest: '1.0.0' },
      versions: {
        '1.0.0': {
          ...manifest,
          hasInstallScript: true,
          dist: {
            tarball: `${url}/${tarballPath}`,
            shasum: createHash('sha1').update(tarball).digest('hex'),
            integrity: `sha512-${createHash('sha512').update(tarball).digest('base64')}`,
          },
        },
      },
    };
    // http.server answers /<name> with a redirect to /<name>/ and serves its index.html there.
    await container.copyContentToContainer([
      { content: JSON.stringify(packument), target: `/srv/${PROBE_PACKAGE}/index.html` },
      { content: tarball, target: `/srv/${tarballPath}` },
    ]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  return { container, url };
}

beforeAll(async () => {
  listener = createServer((socket) => {
    hits += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => listener.listen(0, '0.0.0.0', resolve));
  port = (listener.address() as { port: number }).port;
  peer = await new GenericContainer('ca-sbx-base:python')
    .withCommand(['python3', '-m', 'http.server', '8080'])
    .withExposedPorts(8080)
    .start();
  targets = [
    ...(await hostAddresses()).map((address) => `${address}:${port}`),
    `${peer.getIpAddress('bridge')}:8080`,
  ];
  const served = await startRegistry();
  registry = served.container;
  registryUrl = served.url;
  work = await mkdtemp(join(tmpdir(), 'ca-hostile-egress-'));
  // A box's own probe, run with exec (a node repo without dependencies: the box has node).
  boxRepo = join(work, 'box');
  await mkdir(boxRepo);
  await writeFile(join(boxRepo, 'package.json'), JSON.stringify({ name: 'egress-box', private: true }));
  await writeFile(join(boxRepo, 'probe.js'), PROBE);
  // The repo's own code in pnpm's process: the probe runs while pnpm loads its hooks.
  pnpmfileRepo = join(work, 'pnpmfile');
  await mkdir(pnpmfileRepo);
  await writeFile(
    join(pnpmfileRepo, 'package.json'),
    JSON.stringify({
      name: 'egress-pnpmfile',
      version: '1.0.0',
      private: true,
      packageManager: 'pnpm@9.15.9',
    }),
  );
  await writeFile(
    join(pnpmfileRepo, '.pnpmfile.cjs'),
    [
      `const probe = ${JSON.stringify(PROBE)};`,
      `require('node:child_process').execFileSync(process.execPath, ['-e', probe, 'pnpmfile', ${JSON.stringify(JSON.stringify(targets))}, ${JSON.stringify(report('pnpmfile'))}], { stdio: 'inherit' });`,
      'module.exports = {};',
      '',
    ].join('\n'),
  );
  // Dependencies' postinstall (npm runs them): one from the registry, one the repo holds itself
  // (`file:./local-dep`, installed as a dependency, its scripts kept; only its manifest reaches the
  // build, so the probe is a field of it). The root's and a workspace package's own postinstall
  // would run the probe too if the install ran them (it does not: checked below).
  dependencyRepo = join(work, 'dependency');
  const own = (who: string) => ({
    postinstall: `node -e "require('fs').writeFileSync('${report(who)}', 'ran')"`,
  });
  await mkdir(join(dependencyRepo, 'packages', 'ws-a'), { recursive: true });
  await writeFile(
    join(dependencyRepo, 'package.json'),
    JSON.stringify({
      name: 'egress-dependency',
      version: '1.0.0',
      private: true,
      workspaces: ['packages/*'],
      dependencies: { [PROBE_PACKAGE]: '1.0.0', 'local-dep': 'file:./local-dep' },
      scripts: own('root'),
    }),
  );
  await mkdir(join(dependencyRepo, 'local-dep'));
  await writeFile(
    join(dependencyRepo, 'local-dep', 'package.json'),
    JSON.stringify({
      name: 'local-dep',
      version: '1.0.0',
      probe: PROBE,
      scripts: {
        postinstall: `node -e "eval(require('./package.json').probe)" file-dependency '${JSON.stringify(targets)}' ${report('file-dependency')}`,
      },
    }),
  );
  await writeFile(
    join(dependencyRepo, 'packages', 'ws-a', 'package.json'),
    JSON.stringify({ name: 'ws-a', version: '1.0.0', scripts: own('workspace') }),
  );
});

afterAll(async () => {
  await destroyLeftovers();
  await peer?.stop();
  await registry?.stop();
  await new Promise((resolve) => listener?.close(resolve));
  if (work) await rm(work, { recursive: true, force: true });
  if (images.size) await docker(['image', 'rm', '--force', ...images], { allowFailure: true });
});

/** The probe's report, read from the box: nothing reached, the registry (the control) reached. */
async function expectContained(id: string, who: string): Promise<void> {
  const read = await execBox(id, ['cat', report(who)]);
  expect(read.exitCode, `${who}: ${read.stderr}`).toBe(0);
  const seen = read.stdout;
  console.info(`egress probe (${who}):\n${seen}`);
  expect(escapes(seen), `${who}:\n${seen}`).toEqual([]);
  // The probe went through the gateway the install was given, not some other proxy.
  expect(seen).toMatch(/^proxy \d+\.\d+\.\d+\.\d+:3128$/m);
  for (const target of targets) {
    expect(seen).toContain(`BLOCKED direct ${target}`);
    expect(seen).toMatch(new RegExp(`BLOCKED proxy ${target.replace(/\./g, '\\.')} 403`));
  }
  expect(seen).toContain('BLOCKED dns');
  expect(seen).toContain('off-list 403');
  // The control: the registry is on the list and its tunnel opens.
  expect(seen).toContain('registry 200');
}

/** What the install tried to reach is on the record, refusals included. */
async function expectRecorded(id: string): Promise<void> {
  const record = await cli(['egress', id, '--json']);
  expect(record.exitCode, record.stderr).toBe(0);
  const decisions = parseJson<{ phase: string; destination: string; allowed: boolean }[]>(record);
  expect(decisions).toContainEqual(
    expect.objectContaining({ phase: 'install', destination: 'example.com:443', allowed: false }),
  );
  expect(decisions).toContainEqual(
    expect.objectContaining({ phase: 'install', destination: 'registry.npmjs.org:443', allowed: true }),
  );
  for (const target of targets)
    expect(decisions).toContainEqual(
      expect.objectContaining({ phase: 'install', destination: target, allowed: false }),
    );
}

/** Destroys the box; nothing of the sandbox or its gateway (containers, volume, networks) is left. */
async function expectGone(id: string): Promise<void> {
  await destroyBox(id);
  expect(await labeledLeft(id)).toEqual([]);
}

describe('install code behind the egress gateway', () => {
  it(".pnpmfile.cjs (the repo's code in pnpm's process) reaches neither the host, another container nor an off-list domain, and resolves no name", async () => {
    const box = await createBox(pnpmfileRepo, { network: 'clone-then-cut' });
    images.add(box.image);
    await expectContained(box.id, 'pnpmfile');
    expect(hits).toBe(0);
    await expectRecorded(box.id);
    await expectGone(box.id);
  });

  it("dependencies' postinstall (from a configured mirror, and a file: package of the repo) are held the same way; the repo's own root and workspace scripts do not run", async () => {
    const box = await createBox(dependencyRepo, {
      network: 'clone-then-cut',
      env: { CA_SANDBOX_NPM_REGISTRY: registryUrl },
    });
    images.add(box.image);
    await expectContained(box.id, 'dependency');
    await expectContained(box.id, 'file-dependency');
    expect(hits).toBe(0);
    // Skipped by design (the install sees only manifests), so not a way out to test here.
    for (const who of ['root', 'workspace'])
      expect((await execBox(box.id, ['test', '-e', report(who)])).exitCode, who).toBe(1);
    await expectRecorded(box.id);
    // The mirror is the user's own: allowed, wherever it resolves (this host's address included).
    const record = parseJson<{ phase: string; destination: string; allowed: boolean }[]>(
      await cli(['egress', box.id, '--json']),
    );
    expect(record).toContainEqual(
      expect.objectContaining({
        phase: 'install',
        destination: expect.stringContaining(new URL(registryUrl).host),
        allowed: true,
      }),
    );
    await expectGone(box.id);
  });

  it('the listener really answers an ordinary container (the probe is not vacuous)', async () => {
    const address = targets[0]?.split(':')[0];
    const probe = await docker(
      [
        'run',
        '--rm',
        'ca-sbx-base:debian',
        'bash',
        '-c',
        `timeout 5 bash -c 'exec 3<>/dev/tcp/${address}/${port}' && echo REACHED`,
      ],
      { allowFailure: true },
    );
    expect(probe.stdout).toContain('REACHED');
  });
});

describe('an allowlist box behind the egress gateway', () => {
  it('reaches the allowed name and the allowed address, and nothing else', async () => {
    const allowed = targets[0] as string;
    const box = await createBox(boxRepo, {
      network: 'allowlist',
      extra: ['--allow', 'registry.npmjs.org', '--allow', allowed],
    });
    const before = hits;
    const probe = await execBox(
      box.id,
      ['node', 'probe.js', 'box', JSON.stringify([allowed, ...targets.slice(1)])],
      ['--timeout', '120'],
    );
    expect(probe.exitCode, probe.stderr).toBe(0);
    // The explicitly allowed address answers through the gateway, never directly.
    expect(probe.stdout).toContain(`BLOCKED direct ${allowed}`);
    expect(probe.stdout).toContain(`REACHED proxy ${allowed} 200`);
    expect(hits).toBeGreaterThan(before);
    for (const target of targets.slice(1)) {
      expect(probe.stdout).toContain(`BLOCKED direct ${target}`);
      expect(probe.stdout).toMatch(new RegExp(`BLOCKED proxy ${target.replace(/\./g, '\\.')} 403`));
    }
    expect(probe.stdout).toContain('BLOCKED dns');
    expect(probe.stdout).toContain('off-list 403');
    expect(probe.stdout).toContain('registry 200');
    const verify = await cli(['verify', box.id, '--json']);
    expect(verify.exitCode, verify.stdout).toBe(0);
    expect(parseJson<{ checks: { check: string; pass: boolean }[] }>(verify).checks).toContainEqual(
      expect.objectContaining({ check: 'allowlist-gateway', pass: true }),
    );
    const record = parseJson<{ phase: string; destination: string; allowed: boolean }[]>(
      await cli(['egress', box.id, '--json']),
    );
    expect(record).toContainEqual(
      expect.objectContaining({ phase: 'box', destination: 'example.com:443', allowed: false }),
    );
    await expectGone(box.id);
    // A gateway allowlist sets no host firewall rule; none of this id's is left either way.
    const rules = await execa('iptables', ['-w', '10', '-S'], { reject: false });
    expect(rules.stdout).not.toContain(`ca-sandbox:${box.id}`);
  });

  it('a box that floods its gateway log cannot grow it on the host past the cap, and its record says where it was cut', async () => {
    const box = await createBox(boxRepo, { network: 'allowlist', extra: ['--allow', 'registry.npmjs.org'] });
    // 5,000 refused plain-HTTP requests with 6,000-character URLs on one kept-alive connection:
    // about 29 MiB of access log, past the 16 MiB the gateway writes and the CLI reads.
    const flood = [
      "const net = require('net');",
      'const proxy = new URL(process.env.HTTP_PROXY || process.env.http_proxy);',
      'const s = net.connect({ host: proxy.hostname, port: Number(proxy.port) });',
      "const path = 'x'.repeat(6000); let sent = 0, answered = 0, buffered = '';",
      "const send = () => { sent++; s.write('GET http://flood.invalid/' + path + sent + ' HTTP/1.1\\r\\nHost: flood.invalid\\r\\n\\r\\n'); };",
      "s.on('connect', send);",
      "s.on('data', (d) => { buffered += d; let at; while ((at = buffered.indexOf('HTTP/1.1 403')) >= 0) { buffered = buffered.slice(at + 12); answered++; if (answered < 5000) send(); else { console.log('answered ' + answered); s.destroy(); } } });",
      "s.on('close', () => { if (answered < 5000) console.log('closed after ' + answered); });",
    ].join('\n');
    const run = await execBox(box.id, ['node', '-e', flood], ['--timeout', '300']);
    expect(run.stdout).toContain('answered 5000');
    // What the daemon keeps of the gateway's output on the host's disk: its json-file (each line
    // wrapped in a little JSON) holds the capped 16 MiB, not the 29 MiB the box asked for.
    const gateway = (
      await docker([
        'ps',
        '-q',
        '--filter',
        `label=${LABEL_ID}=${box.id}`,
        '--filter',
        `label=${LABEL_ROLE}=gateway`,
      ])
    ).stdout.trim();
    expect(gateway).toMatch(/^[0-9a-f]+$/);
    const logPath = (await docker(['inspect', '--format', '{{.LogPath}}', gateway])).stdout.trim();
    expect(logPath).not.toBe('');
    expect((await stat(logPath)).size).toBeLessThan(18 * 1024 * 1024);
    const record = await cli(['egress', box.id, '--json']);
    expect(record.exitCode, record.stderr).toBe(0);
    const rows = parseJson<{ phase: string; destination: string; allowed: boolean }[]>(record);
    expect(rows).toContainEqual(
      expect.objectContaining({
        phase: 'box',
        allowed: false,
        destination: '(gateway-log-cut-at-16MiB:later-requests-not-recorded)',
      }),
    );
    await expectGone(box.id);
  }, 600_000);
});
