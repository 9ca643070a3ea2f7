import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { docker } from '@ca-sandbox/docker/cli';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  cli,
  createBox,
  destroyBox,
  destroyLeftovers,
  execBox,
  FIXTURES,
  labeledLeft,
  parseJson,
} from './_harness.js';

/**
 * `--credential`: the gateway adds a host value to the box's HTTPS requests for one allowed
 * domain; the box must never get the value. The API is a stand-in of ours: an HTTPS server in a
 * network namespace of this machine (a TEST-NET address routed over a veth, so it is neither a
 * blocked range nor this host's own address), reached by a name the gateway is pinned to
 * (setting gatewayHosts), trusted by the gateway through the user's CA bundle (caCertificates).
 * It records what it got and never echoes a header back. The box runs under runc and tries every
 * way it has to read the value.
 */

const API = 'api.ca-sbx-standin.test';
const OTHER = 'other.ca-sbx-standin.test';
const canary = `sk-canary-${randomUUID()}`;
const suffix = randomBytes(2).toString('hex');
const netns = `ca-sbx-cred-${suffix}`;
// "veth…": the harness's hostAddress() skips it (it is no address of this host's network).
const hostLink = `vethcbx${suffix}`;
const nsLink = `cbxn${suffix}`;
const pair = 2 * (1 + ((randomBytes(1)[0] as number) % 60));
const hostSide = `198.51.100.${pair - 1}`;
const standIn = `198.51.100.${pair}`;
// The other host is another address of the stand-in: squid checks a Host header against the
// address of the tunnel it came through (host_verify_strict), as with real hosts.
const otherStandIn = `198.51.100.${pair + 128}`;

const SERVER = String.raw`
const https = require('https'), http = require('http'), fs = require('fs');
const [key, cert, log] = process.argv.slice(2);
const handler = (scheme) => (req, res) => {
  fs.appendFileSync(log, JSON.stringify({ scheme, method: req.method, url: req.url, host: req.headers.host,
    authorization: req.headers.authorization ?? null }) + '\n');
  if (req.url === '/redirect') { res.writeHead(302, { location: 'https://${OTHER}:8443/landed' }); return res.end(); }
  res.writeHead(200, { 'content-type': 'text/plain' });
  res.end('ok ' + req.method + ' ' + req.url + '\n');
};
https.createServer({ key: fs.readFileSync(key), cert: fs.readFileSync(cert) }, handler('https')).listen(8443, '0.0.0.0');
// api.anthropic.com on 443: as much of the Messages API as Claude Code's \`-p\` needs.
const [claudeKey, claudeCert] = process.argv.slice(5);
https.createServer({ key: fs.readFileSync(claudeKey), cert: fs.readFileSync(claudeCert) }, (req, res) => {
  let body = '';
  req.on('data', (d) => { body += d; });
  req.on('end', () => {
    fs.appendFileSync(log, JSON.stringify({ scheme: 'anthropic', method: req.method, url: req.url, host: req.headers.host,
      authorization: req.headers.authorization ?? null, apiKey: req.headers['x-api-key'] ?? null }) + '\n');
    if (req.method === 'GET' && req.url === '/api/hello') { res.writeHead(200); return res.end('{}'); }
    if (req.method !== 'POST' || !req.url.startsWith('/v1/messages')) { res.writeHead(404); return res.end('{}'); }
    let stream = false;
    try { stream = JSON.parse(body).stream === true; } catch {}
    const message = { id: 'msg_standin', type: 'message', role: 'assistant', model: 'claude-standin', stop_sequence: null };
    if (!stream) {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ ...message, content: [{ type: 'text', text: 'STANDIN-REPLY' }], stop_reason: 'end_turn',
        usage: { input_tokens: 1, output_tokens: 1 } }));
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const send = (data) => res.write('event: ' + data.type + '\ndata: ' + JSON.stringify(data) + '\n\n');
    send({ type: 'message_start', message: { ...message, content: [], stop_reason: null, usage: { input_tokens: 1, output_tokens: 1 } } });
    send({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
    send({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'STANDIN-REPLY' } });
    send({ type: 'content_block_stop', index: 0 });
    send({ type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 1 } });
    send({ type: 'message_stop' });
    res.end();
  });
}).listen(443, '0.0.0.0');
http.createServer(handler('http')).listen(8080, '0.0.0.0', () => console.log('listening'));
`;

/**
 * The box's probe (in the fixture repo). `fetch URL [AUTH]`: node's fetch through the gateway
 * (redirects followed), prints the status and body. `raw HOST:PORT SNI REQUEST`: a CONNECT by hand,
 * then TLS to SNI (the box's own trust), then REQUEST as is; prints the answer. `proxy REQUEST`:
 * REQUEST sent to the gateway itself as is; prints the answer.
 */
const PROBE = String.raw`
const net = require('net'), tls = require('tls'), fs = require('fs');
const proxy = new URL(process.env.HTTPS_PROXY);
const [mode, a, b, c] = process.argv.slice(2);
const ca = fs.readFileSync(process.env.SSL_CERT_FILE);
const done = (text) => { process.stdout.write(text.slice(0, 4000) + '\n'); process.exit(0); };
const collect = (socket) => { let out = ''; socket.on('data', (d) => { out += d; }); socket.on('end', () => done(out));
  socket.on('error', (e) => done(out + ' ERROR ' + e.code)); setTimeout(() => done(out + ' TIMEOUT'), 8000); };
if (mode === 'fetch') {
  fetch(a, { headers: b ? { authorization: b } : {} }).then(async (r) => done(r.status + ' ' + (await r.text())),
    (e) => done('FAILED ' + String(e.cause ?? e)));
} else if (mode === 'proxy') {
  const s = net.connect(Number(proxy.port), proxy.hostname, () => s.write(JSON.parse(a)));
  collect(s);
} else if (mode === 'raw') {
  const s = net.connect(Number(proxy.port), proxy.hostname, () => s.write('CONNECT ' + a + ' HTTP/1.1\r\nHost: ' + a + '\r\n\r\n'));
  let head = '';
  const onHead = (d) => {
    head += d;
    if (!head.includes('\r\n\r\n')) return;
    s.removeListener('data', onHead);
    if (!/^HTTP\/1\.[01] 200/.test(head)) return done('CONNECT ' + head.split('\r\n')[0]);
    const t = tls.connect({ socket: s, servername: b, ca }, () => t.write(JSON.parse(c)));
    collect(t);
  };
  s.on('data', onHead);
}
`;

let work = '';
let fixture = '';
let server: ChildProcess | undefined;
let seenLog = '';
let env: Record<string, string> = {};
let id = '';

/** What the stand-in recorded since the last call. */
let seenCount = 0;
async function seenSince(): Promise<
  {
    scheme: string;
    method: string;
    url: string;
    host: string;
    authorization: string | null;
    apiKey?: string | null;
  }[]
> {
  const lines = (await readFile(seenLog, 'utf8').catch(() => '')).split('\n').filter(Boolean);
  const fresh = lines.slice(seenCount);
  seenCount = lines.length;
  return fresh.map((line) => JSON.parse(line));
}

async function ip(args: string[]): Promise<void> {
  await execa('ip', args);
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'ca-hostile-cred-'));
  const pki = join(work, 'pki');
  await mkdir(pki);
  const openssl = (args: string[]) => execa('openssl', args, { cwd: pki });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  await openssl([
    'req',
    '-x509',
    ...ec,
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
    '-days',
    '2',
    '-subj',
    '/CN=ca-sbx stand-in CA',
  ]);
  // A leaf of the stand-in CA: `<file>.key` and `<file>.pem`, for the names given.
  const leaf = async (file: string, names: string[]) => {
    await openssl([
      'req',
      '-new',
      ...ec,
      '-keyout',
      `${file}.key`,
      '-out',
      `${file}.csr`,
      '-subj',
      `/CN=${names[0]}`,
    ]);
    await writeFile(
      join(pki, `${file}.ext`),
      `subjectAltName=${names.map((name) => `DNS:${name}`).join(',')}\n`,
    );
    const sign = ['-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2'];
    await openssl([
      'x509',
      '-req',
      '-in',
      `${file}.csr`,
      ...sign,
      '-extfile',
      `${file}.ext`,
      '-out',
      `${file}.pem`,
    ]);
  };
  await leaf('api', [API, OTHER]);
  await leaf('claude', ['api.anthropic.com']);
  // The user's bundle: this machine's own (its TLS proxy) and the stand-in's CA.
  const system = await readFile('/etc/ssl/certs/ca-certificates.crt', 'utf8').catch(() => '');
  await writeFile(join(work, 'user-ca.pem'), `${system}\n${await readFile(join(pki, 'ca.pem'), 'utf8')}`);

  await ip(['netns', 'add', netns]);
  await ip(['link', 'add', hostLink, 'type', 'veth', 'peer', 'name', nsLink]);
  await ip(['link', 'set', nsLink, 'netns', netns]);
  await ip(['addr', 'add', `${hostSide}/32`, 'dev', hostLink]);
  await ip(['link', 'set', hostLink, 'up']);
  await ip(['route', 'add', `${standIn}/32`, 'dev', hostLink]);
  await ip(['route', 'add', `${otherStandIn}/32`, 'dev', hostLink]);
  await ip(['-n', netns, 'addr', 'add', `${standIn}/32`, 'dev', nsLink]);
  await ip(['-n', netns, 'addr', 'add', `${otherStandIn}/32`, 'dev', nsLink]);
  await ip(['-n', netns, 'link', 'set', nsLink, 'up']);
  await ip(['-n', netns, 'route', 'add', `${hostSide}/32`, 'dev', nsLink]);
  await ip(['-n', netns, 'route', 'add', 'default', 'via', hostSide, 'dev', nsLink, 'onlink']);

  seenLog = join(work, 'seen.jsonl');
  await writeFile(join(work, 'server.js'), SERVER);
  server = spawn(
    'ip',
    [
      'netns',
      'exec',
      netns,
      process.execPath,
      join(work, 'server.js'),
      join(pki, 'api.key'),
      join(pki, 'api.pem'),
      seenLog,
      join(pki, 'claude.key'),
      join(pki, 'claude.pem'),
    ],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  await new Promise<void>((resolve, reject) => {
    server?.stdout?.once('data', () => resolve());
    server?.once('exit', (code) => reject(new Error(`the stand-in exited ${code}`)));
  });

  fixture = join(work, 'repo');
  await mkdir(fixture);
  await writeFile(
    join(fixture, 'package.json'),
    JSON.stringify({ name: 'cred-probe', version: '1.0.0', private: true }),
  );
  await writeFile(join(fixture, 'probe.js'), PROBE);
  env = {
    CA_SANDBOX_CA_CERTS: join(work, 'user-ca.pem'),
    // api.anthropic.com too: the --with-claude box below talks to the stand-in under that name.
    CA_SANDBOX_GATEWAY_HOSTS: `${API}=${standIn},${OTHER}=${otherStandIn},api.anthropic.com=${standIn}`,
    CA_SBX_TEST_API_KEY: canary,
  };
  const box = await createBox(fixture, {
    runtime: 'runc',
    network: 'allowlist',
    env,
    extra: [
      '--allow',
      `${API}:8443`,
      '--allow',
      `${API}:8080`,
      '--allow',
      `${OTHER}:8443`,
      '--credential',
      `${API}=env:CA_SBX_TEST_API_KEY`,
    ],
  });
  id = box.id;
  expect(JSON.stringify(box)).not.toContain(canary);
}, 600_000);

afterAll(async () => {
  await destroyLeftovers();
  server?.kill('SIGKILL');
  await execa('ip', ['netns', 'del', netns], { reject: false });
  await execa('ip', ['link', 'del', hostLink], { reject: false });
  if (work) await rm(work, { recursive: true, force: true });
});

const probe = async (...args: string[]) =>
  (await execBox(id, ['node', '/work/repo/probe.js', ...args])).stdout;

describe('a credential the gateway adds', () => {
  it('reaches the API on every HTTPS request, replacing what the box sent', async () => {
    await seenSince();
    expect(await probe('fetch', `https://${API}:8443/v1/one`)).toMatch(/^200 ok GET \/v1\/one/);
    expect(await probe('fetch', `https://${API}:8443/v1/two`, 'Bearer the-box-own')).toMatch(/^200 /);
    const seen = await seenSince();
    expect(seen.map((row) => [row.url, row.authorization])).toEqual([
      ['/v1/one', `Bearer ${canary}`],
      ['/v1/two', `Bearer ${canary}`],
    ]);
    const egress = await cli(['egress', id, '--json']);
    const rows = parseJson<{ destination: string; credential?: string }[]>(egress);
    expect(rows).toContainEqual(
      expect.objectContaining({ destination: `https://${API}:8443/v1/one`, credential: API }),
    );
    expect(egress.stdout).not.toContain(canary);
  }, 120_000);

  it('never goes over plain HTTP, to another host by a redirect or a Host header, or back by TRACE', async () => {
    await seenSince();
    expect(await probe('fetch', `http://${API}:8080/plain`)).toMatch(/^200 /);
    // The redirect goes to another allowed host: the box follows it, the credential does not.
    expect(await probe('fetch', `https://${API}:8443/redirect`)).toMatch(/^200 ok GET \/landed/);
    // Through the tunnel to the API, a request that names the other host: squid reads it as a
    // request to that host (allowed here), which gets no credential.
    const mismatch = await probe(
      'raw',
      `${API}:8443`,
      API,
      JSON.stringify(`GET /mismatch HTTP/1.1\r\nHost: ${OTHER}:8443\r\nConnection: close\r\n\r\n`),
    );
    expect(mismatch).toMatch(/^HTTP\/1\.1 /);
    const trace = await probe(
      'raw',
      `${API}:8443`,
      API,
      JSON.stringify(`TRACE /trace HTTP/1.1\r\nHost: ${API}:8443\r\nConnection: close\r\n\r\n`),
    );
    expect(trace).toMatch(/^HTTP\/1\.1 403/);
    expect(trace).not.toContain(canary);
    const seen = await seenSince();
    expect(seen.find((row) => row.url === '/plain')).toMatchObject({ scheme: 'http', authorization: null });
    expect(seen.find((row) => row.url === '/redirect')).toMatchObject({ authorization: `Bearer ${canary}` });
    expect(seen.find((row) => row.url === '/landed')).toMatchObject({
      host: `${OTHER}:8443`,
      authorization: null,
    });
    expect(seen.find((row) => row.url === '/trace')).toBeUndefined();
    expect(seen.filter((row) => row.url === '/mismatch').map((row) => [row.host, row.authorization])).toEqual(
      [[`${OTHER}:8443`, null]],
    );
    for (const row of seen.filter((each) => each.host?.startsWith(OTHER)))
      expect(row.authorization).toBeNull();
  }, 120_000);

  it('is nowhere the box can read: environment, any /proc, files, the gateway and its error pages', async () => {
    // The box is never told the value: it hunts for its prefix, written so that the pattern
    // does not match itself in the hunt's own command line (nor in the command log).
    expect(canary.startsWith('sk-canary-')).toBe(true);
    const huntFor = (pattern: string, prelude: string[] = []) =>
      execBox(id, [
        'sh',
        '-c',
        [
          ...prelude,
          // Every process the box can see (and what it can read of them).
          `cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' '\\n' | grep -c -E '${pattern}'`,
          `env | grep -c -E '${pattern}'`,
          // Every readable file, the box's image and tmpfs included.
          `timeout 240 grep -rlsE '${pattern}' / --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev | head -5`,
          'echo hunted',
        ].join('\n'),
      ]);
    // The hunt finds what is there: a mark of the box's own, in a file and a process.
    const control = await huntFor('ctl-mar[k]er-', [
      "echo ctl-mark''er-1 > /tmp/control",
      "CTL=ctl-mark''er-2 sleep 30 &",
      // The hunt starts once that process runs with its environment (a fork not yet exec'd has
      // the shell's: the control read 0 now and then in CI).
      "until tr '\\0' '\\n' < /proc/$!/environ 2>/dev/null | grep -q 'ctl-mar[k]er-2'; do sleep 0.05; done",
    ]);
    expect(control.stdout.split('\n').filter(Boolean)).toEqual(['1', '0', '/tmp/control', 'hunted']);
    const hunt = await huntFor('sk-canar[y]-');
    expect(hunt.stdout.split('\n').filter(Boolean)).toEqual(['0', '0', 'hunted']);
    // The gateway itself: its cache manager (which would list the configuration and its
    // includes), its own pages, an off-list name, a malformed request, a CONNECT to its own port.
    const answers = [
      await probe('proxy', JSON.stringify('GET cache_object://localhost/config HTTP/1.0\r\n\r\n')),
      await probe(
        'proxy',
        JSON.stringify('GET /squid-internal-mgr/config HTTP/1.1\r\nHost: ca-sandbox-gateway:3128\r\n\r\n'),
      ),
      await probe(
        'proxy',
        JSON.stringify(
          `GET http://${API}:8443/squid-internal-mgr/config HTTP/1.1\r\nHost: ${API}:8443\r\n\r\n`,
        ),
      ),
      await probe('proxy', JSON.stringify('GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n')),
      await probe('proxy', JSON.stringify('BREW \x01 nonsense\r\n\r\n')),
      await probe(
        'raw',
        `${API}:8443`,
        API,
        JSON.stringify(
          'GET /squid-internal-mgr/config HTTP/1.1\r\nHost: ca-sandbox-gateway\r\nConnection: close\r\n\r\n',
        ),
      ),
      await probe(
        'raw',
        `${API}:8443`,
        API,
        JSON.stringify(
          `GET /${'a'.repeat(70_000)} HTTP/1.1\r\nHost: ${API}:8443\r\nConnection: close\r\n\r\n`,
        ),
      ),
    ];
    for (const answer of answers) {
      expect(answer).not.toContain(canary);
      expect(answer).not.toMatch(/request_header_add/);
    }
  }, 400_000);

  it('is in no host-side record: inspect of the box and gateway, labels, ls, report', async () => {
    const inspect = await docker(['inspect', `ca-sbx-${id}`, `ca-sbx.gw.${id}`]);
    expect(inspect.stdout).not.toContain(canary);
    for (const args of [
      ['ls', '--json'],
      ['report', id, '--json'],
      ['verify', id, '--json'],
    ]) {
      const result = await cli(args, env);
      expect(result.stdout + result.stderr).not.toContain(canary);
    }
    const verify = await cli(['verify', id, '--json'], env);
    expect(verify.exitCode, verify.stdout).toBe(0);
    const report = parseJson<{
      network: { credentials: unknown[]; decisions: { destination: string; credential?: string }[] };
    }>(await cli(['report', id, '--json'], env));
    expect(report.network.credentials).toEqual([
      { domain: API, header: 'authorization', source: 'env:CA_SBX_TEST_API_KEY' },
    ]);
    expect(report.network.decisions).toContainEqual(
      expect.objectContaining({ destination: `https://${API}:8443/v1/one`, credential: API }),
    );
    const record = parseJson<{ id: string; credentials: unknown[] }[]>(await cli(['ls', '--json'])).find(
      (each) => each.id === id,
    );
    expect(record?.credentials).toEqual([
      { domain: API, header: 'authorization', source: 'env:CA_SBX_TEST_API_KEY' },
    ]);
  }, 120_000);

  it('comes back after a stop and a gateway restart, read again from its source', async () => {
    await docker(['restart', '--time', '0', `ca-sbx.gw.${id}`]);
    expect((await cli(['stop', id])).exitCode).toBe(0);
    // Without its variable: the box starts, says so, and its requests go without it.
    const bare = await cli(['start', id, '--json'], { ...env, CA_SBX_TEST_API_KEY: '' });
    expect(bare.exitCode, bare.stderr).toBe(0);
    expect(parseJson<{ notices: string[] }>(bare).notices.join('\n')).toMatch(/CA_SBX_TEST_API_KEY/);
    await seenSince();
    expect(await probe('fetch', `https://${API}:8443/bare`)).toMatch(/^200 /);
    expect((await seenSince()).map((row) => row.authorization)).toEqual([null]);
    await docker(['restart', '--time', '0', `ca-sbx.gw.${id}`]);
    expect((await cli(['stop', id])).exitCode).toBe(0);
    const again = await cli(['start', id, '--json'], env);
    expect(again.exitCode, again.stderr).toBe(0);
    expect(await probe('fetch', `https://${API}:8443/again`)).toMatch(/^200 /);
    expect((await seenSince()).map((row) => row.authorization)).toEqual([`Bearer ${canary}`]);
  }, 300_000);

  it('is refused where it cannot be honoured, before anything is made', async () => {
    const cases: [string[], RegExp][] = [
      [['--network', 'offline'], /a box with --network offline reaches no API/],
      [['--network', 'clone-then-cut'], /a box with --network clone-then-cut reaches no API/],
      [['--network', 'allowlist', '--allow', standIn], /an allowlist of addresses has no gateway/],
      [['--network', 'allowlist', '--allow', `${OTHER}:8443`], /not on the allowlist/],
    ];
    for (const [flags, why] of cases) {
      const name = `hostile-cred-${randomUUID().slice(0, 6)}`;
      const result = await cli(
        ['create', fixture, '--name', name, ...flags, '--credential', `${API}=env:CA_SBX_TEST_API_KEY`],
        env,
      );
      expect(result.exitCode, result.stderr).toBe(2);
      expect(result.stderr).toMatch(why);
      // One error line (an address allowlist is also warned about as EXPERIMENTAL).
      expect(result.stderr.split('\n').filter((line) => line.startsWith('error:'))).toHaveLength(1);
      expect(await labeledLeft(name)).toEqual([]);
    }
    // The value typed where its source goes, and values squid could not carry as given.
    const createWith = (credential: string, more: Record<string, string> = {}) =>
      cli(
        ['create', fixture, '--network', 'allowlist', '--allow', `${API}:8443`, '--credential', credential],
        { ...env, ...more },
      );
    const typo = await createWith(`${API}=sk-${canary}`);
    expect(typo.exitCode).toBe(2);
    expect(typo.stderr).toMatch(/the source must start with env: or file:/);
    expect(typo.stderr + typo.stdout).not.toContain(canary);
    for (const value of ['x'.repeat(5000), `${canary}\${service_name}`, '%'.repeat(2100)]) {
      const bad = await createWith(`${API}=env:CA_SBX_BAD_VALUE`, { CA_SBX_BAD_VALUE: value });
      expect(bad.exitCode, bad.stderr).toBe(2);
      expect(bad.stderr).toMatch(
        /the credential for api\.ca-sbx-standin\.test from the variable CA_SBX_BAD_VALUE: /,
      );
      expect(bad.stderr).not.toContain(value.slice(0, 40));
    }
    const unset = await createWith(`${API}=env:CA_SBX_NOT_SET`);
    expect(unset.exitCode).toBe(2);
    expect(unset.stderr).toMatch(/the variable CA_SBX_NOT_SET is not set/);
  }, 120_000);

  it('leaves nothing once destroyed', async () => {
    await destroyBox(id);
    expect(await labeledLeft(id)).toEqual([]);
  }, 120_000);
});

describe('--with-claude with the key in the gateway', () => {
  it('a real Claude Code talks to the API (a stand-in under its name) with a key it never holds', async () => {
    const box = await createBox(join(FIXTURES, 'with-claude'), {
      network: 'allowlist',
      runtime: 'runc',
      env,
      extra: ['--with-claude', '--credential', 'api.anthropic.com=env:CA_SBX_TEST_API_KEY'],
    });
    expect(JSON.stringify(box)).not.toContain(canary);
    await seenSince();
    const answer = await execBox(box.id, ['timeout', '120', 'claude', '-p', 'say hi']);
    expect(answer.exitCode, answer.stderr).toBe(0);
    expect(answer.stdout).toContain('STANDIN-REPLY');
    const messages = (await seenSince()).filter(
      (row) => row.scheme === 'anthropic' && row.url.startsWith('/v1/messages'),
    );
    expect(messages.length).toBeGreaterThan(0);
    for (const row of messages) expect(row.apiKey).toBe(canary);
    // What Claude Code holds is the placeholder; its state file approves that, not the key.
    const held = await execBox(box.id, [
      'sh',
      '-c',
      'printf "%s\\n" "$ANTHROPIC_API_KEY"; cat /tmp/.claude.json',
    ]);
    expect(held.stdout.split('\n')[0]).toBe('ca-sandbox-placeholder-the-gateway-adds-the-real-key');
    expect(held.stdout).not.toContain(canary);
    await destroyBox(box.id);
    expect(await labeledLeft(box.id)).toEqual([]);
  }, 900_000);
});
