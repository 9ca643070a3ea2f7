// Every transport of the Engine API client, for real: each test puts a relay of our own in front
// of the local engine socket (plain tcp, tcp+TLS with a CA made here by openssl, a docker context
// that names the tcp relay, and ssh through a fake `ssh` program that runs `docker system
// dial-stdio` locally), then checks that the API calls AND the docker CLI went through the relay.
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer as createTlsServer } from 'node:tls';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { engine } from './engine.js';
import { DockerUnavailableError } from './errors.js';
import { docker } from './exec-docker.js';

const SOCKET = '/var/run/docker.sock';
const name = `sbx-${randomUUID().slice(0, 8)}`;
const work = mkdtempSync(join(tmpdir(), 'ca-sbx-transports-'));
const KEYS = [
  'DOCKER_HOST',
  'DOCKER_CONTEXT',
  'DOCKER_CONFIG',
  'DOCKER_TLS_VERIFY',
  'DOCKER_CERT_PATH',
  'PATH',
];
const saved = Object.fromEntries(KEYS.map((key) => [key, process.env[key]]));
let server: Server | undefined;
let connections = 0;
const open = new Set<Socket>();

/** Pipes each connection to the engine's unix socket (half-close kept: exec stdin ends that way) and counts them. */
function relay(socket: Socket): void {
  connections += 1;
  const engineSide = connect({ path: SOCKET, allowHalfOpen: true });
  socket.pipe(engineSide).pipe(socket);
  socket.on('error', () => engineSide.destroy());
  engineSide.on('error', () => socket.destroy());
}

async function listen(made: Server): Promise<number> {
  server = made;
  // Every raw connection, a TLS handshake that failed included, so that close() does not wait.
  made.on('connection', (socket: Socket) => {
    open.add(socket);
    socket.on('close', () => open.delete(socket));
  });
  await new Promise<void>((resolve) => made.listen(0, '127.0.0.1', resolve));
  return (made.address() as { port: number }).port;
}

/** What every transport must carry: a read, a hijacked exec with both streams, and the CLI. */
async function exercise(viaRelay = true): Promise<void> {
  const before = connections;
  expect(await engine.system.ping()).toBe(true);
  expect((await engine.container.inspect(name)).Name).toBe(`/${name}`);
  const outcome = await engine.exec.run(name, {
    cmd: ['sh', '-c', 'echo out; echo err >&2; exit 4'],
    user: '1000:1000',
  });
  expect(outcome).toEqual({ exitCode: 4, stdout: 'out\n', stderr: 'err\n' });
  const fed = await engine.exec.internal(name, ['/bin/cat'], { user: '1000:1000', input: 'through stdin' });
  expect(fed.stdout).toBe('through stdin');
  if (viaRelay) {
    const { stdout } = await docker(['container', 'inspect', '--format', '{{.Name}}', '--', name]);
    expect(stdout.trim()).toBe(`/${name}`);
  }
  if (viaRelay) expect(connections).toBeGreaterThan(before);
}

beforeAll(async () => {
  await docker([
    'run',
    '-d',
    '--rm',
    '--name',
    name,
    '--label',
    'ca.sandbox=1',
    '--label',
    `ca.sandbox.id=${name}`,
    '--network',
    'none',
    '--user',
    '1000:1000',
    'ca-sbx-base:debian',
    'sleep',
    '600',
  ]);
});

afterEach(async () => {
  for (const key of KEYS) {
    if (saved[key] === undefined) delete process.env[key];
    else process.env[key] = saved[key];
  }
  const closing = server;
  server = undefined;
  for (const socket of open) socket.destroy();
  if (closing) await new Promise<void>((resolve) => closing.close(() => resolve()));
});

afterAll(async () => {
  await engine.container.remove(name, { force: true });
  rmSync(work, { recursive: true, force: true });
});

describe('Engine API transports, each through a relay of ours', () => {
  it('tcp', async () => {
    const port = await listen(createServer({ allowHalfOpen: true }, relay));
    process.env.DOCKER_HOST = `tcp://127.0.0.1:${port}`;
    await exercise();
  });

  it('tcp with TLS, client certificate required (openssl-made CA)', async () => {
    const dir = join(work, 'tls');
    mkdirSync(dir);
    const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
    ssl(
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      'ca-key.pem',
      '-out',
      'ca.pem',
      '-days',
      '2',
      '-subj',
      '/CN=ca-sbx test CA',
    );
    writeFileSync(join(dir, 'server.ext'), 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
    writeFileSync(join(dir, 'client.ext'), 'extendedKeyUsage=clientAuth\n');
    for (const who of ['server', 'client']) {
      ssl(
        'req',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        `${who}-key.pem`,
        '-out',
        `${who}.csr`,
        '-subj',
        `/CN=${who}`,
      );
      ssl(
        'x509',
        '-req',
        '-in',
        `${who}.csr`,
        '-CA',
        'ca.pem',
        '-CAkey',
        'ca-key.pem',
        '-CAcreateserial',
        '-out',
        `${who}.pem`,
        '-days',
        '2',
        '-extfile',
        `${who}.ext`,
      );
    }
    // What DOCKER_CERT_PATH holds for the client.
    const certs = join(dir, 'client-certs');
    mkdirSync(certs);
    writeFileSync(join(certs, 'ca.pem'), readFileSync(join(dir, 'ca.pem')));
    writeFileSync(join(certs, 'cert.pem'), readFileSync(join(dir, 'client.pem')));
    writeFileSync(join(certs, 'key.pem'), readFileSync(join(dir, 'client-key.pem')));
    const tlsServer = createTlsServer(
      {
        key: readFileSync(join(dir, 'server-key.pem')),
        cert: readFileSync(join(dir, 'server.pem')),
        ca: readFileSync(join(dir, 'ca.pem')),
        requestCert: true,
        rejectUnauthorized: true,
        allowHalfOpen: true,
      },
      relay,
    );
    const port = await listen(tlsServer);
    process.env.DOCKER_HOST = `tcp://127.0.0.1:${port}`;
    process.env.DOCKER_TLS_VERIFY = '1';
    process.env.DOCKER_CERT_PATH = certs;
    await exercise();
    // Without the client certificate the relay refuses: that is an unreachable engine, not a crash.
    process.env.DOCKER_CERT_PATH = join(dir, 'nothing-here');
    await expect(engine.container.inspect(name)).rejects.toBeInstanceOf(DockerUnavailableError);
  }, 60_000);

  it('a docker context (currentContext of a fake DOCKER_CONFIG) naming the tcp relay', async () => {
    const port = await listen(createServer({ allowHalfOpen: true }, relay));
    const config = join(work, 'config');
    const digest = (await import('node:crypto')).createHash('sha256').update('relay').digest('hex');
    mkdirSync(join(config, 'contexts', 'meta', digest), { recursive: true });
    writeFileSync(
      join(config, 'contexts', 'meta', digest, 'meta.json'),
      JSON.stringify({
        Name: 'relay',
        Metadata: {},
        Endpoints: { docker: { Host: `tcp://127.0.0.1:${port}`, SkipTLSVerify: false } },
      }),
    );
    writeFileSync(join(config, 'config.json'), JSON.stringify({ currentContext: 'relay' }));
    delete process.env.DOCKER_HOST;
    delete process.env.DOCKER_CONTEXT;
    process.env.DOCKER_CONFIG = config;
    await exercise();
  });

  it('ssh: `ssh … docker system dial-stdio` (a fake ssh on PATH runs it locally)', async () => {
    const bin = join(work, 'bin');
    mkdirSync(bin, { recursive: true });
    const log = join(work, 'ssh.log');
    writeFileSync(
      join(bin, 'ssh'),
      [
        '#!/bin/sh',
        `echo "$*" >> '${log}'`,
        'while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do shift; done',
        'shift 2', // `--` and the target
        'unset DOCKER_HOST DOCKER_CONTEXT',
        'exec "$@"',
        '',
      ].join('\n'),
    );
    chmodSync(join(bin, 'ssh'), 0o755);
    process.env.PATH = `${bin}:${process.env.PATH}`;
    process.env.DOCKER_HOST = 'ssh://builder@engine.invalid:2222';
    await exercise(false);
    const calls = readFileSync(log, 'utf8').trim().split('\n');
    expect(calls.length).toBeGreaterThanOrEqual(4);
    expect(calls[0]).toBe(
      '-p 2222 -o ConnectTimeout=30 -T -- builder@engine.invalid docker system dial-stdio',
    );
  }, 60_000);

  it('an engine that does not answer is DockerUnavailableError on every transport', async () => {
    for (const host of ['unix:///nonexistent-ca-sbx.sock', 'tcp://127.0.0.1:1']) {
      process.env.DOCKER_HOST = host;
      await expect(engine.volume.list()).rejects.toBeInstanceOf(DockerUnavailableError);
    }
  });
});
