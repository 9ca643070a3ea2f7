import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { docker } from '@ca-sandbox/docker/cli';
import { execa, type ResultPromise } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  cli,
  createBox,
  destroyBox,
  destroyLeftovers,
  execBox,
  hostAddress,
  uniqueName,
} from './_harness.js';

/**
 * The egress gateway must not look up a name it refuses: Docker's resolver forwards a name it does
 * not know to the host's upstream, so a lookup of `<data>.attacker.example` is a message to the
 * attacker's DNS server even when the request itself gets a 403.
 *
 * The test brings a resolver of its own into the gateway's network namespace (a node process of
 * this host, entered into that namespace only), and redirects there every UDP query to port 53
 * that carries this run's marker: it records the name and never answers. So no query with the
 * marker can leave this machine, whatever the gateway does, and any lookup of a refused name is
 * seen here with its name. An allowed name that carries the marker is the control: the gateway
 * does look it up, and the query arrives here. (Allowlist boxes run under runc only: runsc here
 * has no network; iptables in the gateway's namespace needs root.)
 */

const isRoot = process.getuid?.() === 0;
const marker = `lk${randomBytes(5).toString('hex')}`;
const recorders: ResultPromise[] = [];
const queried: string[] = [];
let fixture = '';

/** Prints its port, then the name of every DNS query it receives (RFC 1035 4.1.2), one a line. */
const RECORDER = `
const socket = require('dgram').createSocket('udp4');
socket.on('message', (packet) => {
  const labels = [];
  for (let at = 12; at < packet.length && packet[at] > 0 && labels.length < 128; at += packet[at] + 1)
    labels.push(packet.subarray(at + 1, at + 1 + packet[at]).toString('latin1'));
  process.stdout.write(labels.join('.').toLowerCase().replace(/[^ -~]/g, '?') + '\\n');
});
socket.bind(0, '127.0.0.1', () => process.stdout.write('port ' + socket.address().port + '\\n'));
`;

/** Redirects the marker's DNS queries inside `container`'s network namespace to our recorder. */
async function divertMarkedQueries(container: string): Promise<void> {
  const pid = (await docker(['inspect', '--format', '{{.State.Pid}}', '--', container])).stdout.trim();
  const recorder = execa('nsenter', ['-t', pid, '-n', process.execPath, '-e', RECORDER], { reject: false });
  recorders.push(recorder);
  const port = await new Promise<string>((resolve, reject) => {
    recorder.stdout?.setEncoding('utf8');
    let buffered = '';
    recorder.stdout?.on('data', (chunk: string) => {
      buffered += chunk;
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      for (const line of lines) {
        if (line.startsWith('port ')) resolve(line.slice('port '.length));
        else queried.push(line);
      }
    });
    recorder.catch(reject);
    void recorder.then((result) => reject(new Error(`the recorder ended: ${result.stderr}`)));
  });
  const inNamespace = (argv: string[]) =>
    execa('nsenter', ['-t', pid, '-n', 'iptables', '-w', '10', ...argv]);
  const match = ['-m', 'string', '--algo', 'bm', '--icase', '--string', marker];
  const udp = ['-p', 'udp', '--dport', '53', ...match];
  await inNamespace(['-t', 'nat', '-I', 'OUTPUT', '1', ...udp, '-j', 'REDIRECT', '--to-ports', port]);
  // A query over TCP carries its name after the handshake, past what nat sees: dropped, never sent.
  await inNamespace(['-t', 'raw', '-I', 'OUTPUT', '1', '-p', 'tcp', '--dport', '53', ...match, '-j', 'DROP']);
}

/**
 * Sends each raw request of $1 (lines of `label|request`, printf %b escapes) to the box's proxy and
 * prints `<label> <status>`. The requests are the box's own text: absolute URIs, CONNECT, a Host
 * header that differs from the URL, origin-form, other schemes.
 */
const SEND = `
proxy=\${HTTP_PROXY#http://}; proxy=\${proxy%/}; host=\${proxy%:*}; port=\${proxy##*:}
while IFS='|' read -r label request; do
  exec 3<>/dev/tcp/$host/$port || { echo "$label unreachable"; continue; }
  printf '%b' "$request" >&3
  read -r -t 6 version status rest <&3
  echo "$label \${status:-none}"
  exec 3<&-
done <<< "$1"
`;

function requests(allowed: string): string {
  const long = Array.from({ length: 4 }, (_, index) => `${index}${marker}`.padEnd(63, 'x')).join('.');
  const name = (label: string) => `${label}-${marker}.example`;
  const rows: [string, string][] = [
    ['absolute', `GET http://${name('absolute')}/ HTTP/1.1\\r\\nHost: ${name('absolute')}\\r\\n\\r\\n`],
    ['connect', `CONNECT ${name('connect')}:443 HTTP/1.1\\r\\nHost: ${name('connect')}:443\\r\\n\\r\\n`],
    ['host-header', `GET http://${allowed}/ HTTP/1.1\\r\\nHost: ${name('host-header')}\\r\\n\\r\\n`],
    ['origin-form', `GET / HTTP/1.1\\r\\nHost: ${name('origin-form')}\\r\\n\\r\\n`],
    ['ip-like', `GET http://10.0.0.1.${marker}.example/ HTTP/1.1\\r\\n\\r\\n`],
    ['ip-like-connect', `CONNECT 127.0.0.1.${marker}:443 HTTP/1.1\\r\\n\\r\\n`],
    ['long', `GET http://${long}.example/ HTTP/1.1\\r\\n\\r\\n`],
    ['trailing-dot', `GET http://${name('trailing-dot')}./ HTTP/1.1\\r\\n\\r\\n`],
    ['upper-case', `GET http://${name('upper-case').toUpperCase()}/ HTTP/1.1\\r\\n\\r\\n`],
    ['port', `GET http://${name('port')}:8080/ HTTP/1.1\\r\\n\\r\\n`],
    ['ftp', `GET ftp://${name('ftp')}/file HTTP/1.1\\r\\n\\r\\n`],
    ['cache-manager', `GET cache_object://${name('manager')}/info HTTP/1.1\\r\\n\\r\\n`],
    ['urn', `GET urn:${name('urn')} HTTP/1.1\\r\\n\\r\\n`],
    ['subdomain-of-allowed', `GET http://${marker}.${allowed} HTTP/1.1\\r\\n\\r\\n`],
    ['allowed-on-other-port', `GET http://${allowed}:8443/ HTTP/1.1\\r\\n\\r\\n`],
    ['allowed', `GET http://${allowed}/ HTTP/1.1\\r\\n\\r\\n`],
  ];
  return rows.map(([label, request]) => `${label}|${request}`).join('\n');
}

/**
 * Diverts the marked queries of sandbox `id`'s gateway as soon as it exists, while a create runs:
 * the clone's and the install's gateways live only during the create.
 */
async function divertWhenGatewayStarts(id: string, create: Promise<unknown>): Promise<void> {
  const gateway = `ca-sbx.gw.${id}`;
  let ended = false;
  void create.finally(() => {
    ended = true;
  });
  while (!ended) {
    const running = await docker(['inspect', '--format', '{{.State.Running}}', '--', gateway], {
      allowFailure: true,
    });
    if (running.stdout.trim() === 'true') return divertMarkedQueries(gateway);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`the create ended before its gateway ${gateway} ran`);
}

/**
 * Install-time code (a `.pnpmfile.cjs`, loaded in pnpm's own process) sends a refused request of
 * each kind and one to the allowed control name, once a second for a while: the test diverts the
 * gateway's queries once it sees the gateway, which is before pnpm runs, but the rounds make the
 * result not depend on it.
 */
function pnpmfile(allowed: string): string {
  return `
const net = require('net');
const proxy = new URL(process.env.HTTPS_PROXY || process.env.https_proxy);
const ask = (request) => new Promise((done) => {
  const socket = net.connect({ host: proxy.hostname, port: Number(proxy.port) });
  socket.setTimeout(900, () => { socket.destroy(); done(); });
  socket.on('connect', () => socket.write(request));
  socket.on('data', () => { socket.destroy(); done(); });
  socket.on('error', () => done());
});
const until = Date.now() + 20000;
(async () => {
  for (let round = 0; Date.now() < until; round += 1) {
    await ask('CONNECT install' + round + '-${marker}.example:443 HTTP/1.1\\r\\n\\r\\n');
    await ask('GET http://absolute' + round + '-${marker}.example/ HTTP/1.1\\r\\n\\r\\n');
    await ask('CONNECT 10.0.0.1.${marker}:443 HTTP/1.1\\r\\n\\r\\n');
    await ask('CONNECT ${allowed}:443 HTTP/1.1\\r\\n\\r\\n');
  }
})().then(() => require('fs').writeFileSync('/tmp/pnpmfile-done', ''), () => {});
`;
}

beforeAll(async () => {
  fixture = await mkdtemp(join(tmpdir(), 'ca-hostile-gwdns-'));
  await writeFile(join(fixture, 'README.md'), 'nothing to install\n');
});

afterAll(async () => {
  await destroyLeftovers();
  for (const recorder of recorders) recorder.kill();
  if (fixture) await rm(fixture, { recursive: true, force: true });
});

describe.skipIf(!isRoot)('the egress gateway looks up allowed names only', () => {
  it('refused requests of every form from an allowlist box cause no lookup', async () => {
    // The allowed control name carries the marker too: its lookups come to our resolver, which
    // never answers, so it never resolves and nothing about it leaves the machine.
    const allowed = `okay-${marker}.test`;
    const box = await createBox(fixture, { network: 'allowlist', extra: ['--allow', allowed] });
    await divertMarkedQueries(`ca-sbx.gw.${box.id}`);

    const sent = await execBox(box.id, ['bash', '-c', SEND, 'send', requests(allowed)], ['--timeout', '240']);
    expect(sent.exitCode, sent.stderr).toBe(0);
    const status = new Map(
      sent.stdout
        .trim()
        .split('\n')
        .map((line) => line.split(' ') as [string, string]),
    );
    // Every refused form was answered by squid itself (403, or 400 for what it cannot parse). The
    // Host header one asks for the allowed URL: squid goes by the URL (and looks the allowed name
    // up), never by the header.
    for (const [label, code] of status) {
      if (['allowed', 'allowed-on-other-port', 'host-header'].includes(label)) continue;
      expect([label, code]).toEqual([label, expect.stringMatching(/^(403|400)$/)]);
    }
    expect(status.size).toBe(16);
    // The control: the allowed name is looked up (and its query came here, diverted).
    await expect
      .poll(() => queried.filter((name) => name === allowed).length, { timeout: 15_000 })
      .toBeGreaterThan(0);
    // And nothing else with the marker ever was: no refused name reached a resolver.
    expect(queried.filter((name) => name !== allowed)).toEqual([]);
    await destroyBox(box.id);
  }, 600_000);

  it('install-time code: refused names are never looked up, the allowed one is', async () => {
    const allowed = `okay-install-${marker}.test`;
    const repo = join(fixture, 'install');
    await mkdir(repo);
    await writeFile(
      join(repo, 'package.json'),
      JSON.stringify({ name: 'gwdns', version: '1.0.0', private: true, packageManager: 'pnpm@9.15.9' }),
    );
    // pnpm loads the hooks file synchronously: the probe runs in a child process it waits for.
    await writeFile(
      join(repo, '.pnpmfile.cjs'),
      `require('node:child_process').execFileSync(process.execPath, ['-e', ${JSON.stringify(pnpmfile(allowed))}], { stdio: 'inherit' });\nmodule.exports = {};\n`,
    );
    const name = uniqueName('gwdns');
    const create = cli(['create', repo, '--json', '--name', name, '--network', 'clone-then-cut'], {
      CA_SANDBOX_INSTALL_ALLOW: allowed,
    });
    const before = queried.length;
    try {
      await divertWhenGatewayStarts(name, create);
      const created = await create;
      expect(created.exitCode, created.stderr).toBe(0);
    } finally {
      await create;
      await cli(['destroy', name]);
    }
    const seen = queried.slice(before);
    expect(seen.filter((query) => query === allowed).length).toBeGreaterThan(0);
    expect(seen.filter((query) => query !== allowed)).toEqual([]);
  }, 600_000);

  it('a clone redirected to another name: the name is refused, never looked up', async () => {
    // A git host of ours that holds its answer until the gateway's queries are diverted, then
    // redirects git's first request to a name of the marker.
    let diverted: () => void = () => undefined;
    const ready = new Promise<void>((resolve) => {
      diverted = resolve;
    });
    const redirected: string[] = [];
    const server = createServer((request, response) => {
      void ready.then(() => {
        redirected.push(request.url ?? '');
        response.writeHead(302, { location: `http://redirect-${marker}.example${request.url}` });
        response.end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve));
    try {
      const url = `http://${await hostAddress()}:${(server.address() as AddressInfo).port}/repo.git`;
      const name = uniqueName('gwdns');
      const create = cli(['create', url, '--json', '--name', name, '--network', 'clone-then-cut']);
      const before = queried.length;
      await divertWhenGatewayStarts(name, create).finally(diverted);
      const failed = await create;
      expect(failed.exitCode).toBe(1);
      expect(failed.stderr).toContain('CLONE_FAILED');
      // git asked us, was sent to the marker's name, and the gateway refused it without a lookup.
      expect(redirected.length).toBeGreaterThan(0);
      expect(queried.slice(before)).toEqual([]);
    } finally {
      server.close();
      server.closeAllConnections();
    }
  }, 600_000);
});
