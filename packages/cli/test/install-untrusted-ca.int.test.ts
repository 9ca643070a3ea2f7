// A user behind a TLS-intercepting proxy who has not named its CA: every registry fetch of the
// install fails the certificate check, and npm retries each for a minute or more before it says
// so. The create's error must say what to set (caCertificates), and, when a bundle is set but is
// not the one that signed, say that instead. The registry here is an https server of the test's
// own, its certificate self-signed, published on this host's address as a LAN mirror would be.
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { sandboxLabels } from '@ca-sandbox/docker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  dockerReachable,
  forceRemoveSandbox,
  LIFECYCLE_BUILT,
  LOCAL_IMAGES_ENV,
  remainingObjects,
  runBinWithExactEnv,
} from './_bin.js';

const READY = LIFECYCLE_BUILT && dockerReachable();

/**
 * This host's first IPv4 address off loopback and docker's bridges: where a LAN registry would be
 * (the gateway lets the install reach a configured mirror there), as @ca-sandbox/build's tests do.
 */
function hostAddress(): string {
  for (const [name, addresses] of Object.entries(networkInterfaces())) {
    if (name === 'docker0' || name.startsWith('br-') || name.startsWith('veth')) continue;
    const v4 = addresses?.find((info) => info.family === 'IPv4' && !info.internal);
    if (v4) return v4.address;
  }
  throw new Error('no IPv4 address off loopback on this host');
}

describe.skipIf(!READY)('an install that cannot verify its registry certificate, through the bin', () => {
  const work = mkdtempSync(join(tmpdir(), 'ca-sbx-cli-untrusted-'));
  const serverId = `sbx-${randomUUID().slice(0, 8)}`;
  const serverName = `ca-sbx-${serverId}-tls-registry`;
  const ids: string[] = [];
  let registry = '';

  const openssl = (args: string[]) => execFileSync('openssl', args, { cwd: work, stdio: 'ignore' });
  const selfSigned = (name: string, ip: string) =>
    openssl(
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        `${name}.key`,
        '-out',
        `${name}.pem`,
      ].concat(['-days', '1', '-subj', `/CN=${ip}`, '-addext', `subjectAltName=IP:${ip}`]),
    );

  beforeAll(() => {
    const ip = hostAddress();
    selfSigned('server', ip);
    // A CA the user might name that did not sign the server's certificate.
    selfSigned('other', ip);
    const labels = Object.entries(sandboxLabels(serverId)).flatMap(([k, v]) => ['--label', `${k}=${v}`]);
    execFileSync('docker', [
      'run',
      '-d',
      '--name',
      serverName,
      ...labels,
      '--network',
      'bridge',
      '--read-only',
      '--tmpfs',
      '/tmp',
      '--cap-drop',
      'ALL',
      '--user',
      '1000:1000',
      '--publish',
      `${ip}::8443`,
      'ca-sbx-base:python',
      'sleep',
      'infinity',
    ]);
    const pem =
      readFileSync(join(work, 'server.pem'), 'utf8') + readFileSync(join(work, 'server.key'), 'utf8');
    execFileSync('docker', ['exec', '-i', serverName, 'sh', '-c', 'cat > /tmp/server.pem'], { input: pem });
    const serve = [
      'import http.server, ssl',
      'httpd = http.server.ThreadingHTTPServer(("0.0.0.0", 8443), http.server.SimpleHTTPRequestHandler)',
      'ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); ctx.load_cert_chain("/tmp/server.pem")',
      'httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)',
      'httpd.serve_forever()',
    ].join('\n');
    execFileSync('docker', ['exec', '-d', '-w', '/tmp', serverName, 'python3', '-c', serve]);
    const mapped =
      execFileSync('docker', ['port', serverName, '8443/tcp'], { encoding: 'utf8' }).split('\n')[0] ?? '';
    registry = `https://${ip}:${mapped.slice(mapped.lastIndexOf(':') + 1)}/`;
    for (let i = 0; i < 50; i++) {
      try {
        execFileSync(
          'docker',
          [
            'exec',
            serverName,
            'python3',
            '-c',
            'import socket; socket.create_connection(("127.0.0.1", 8443), 1)',
          ],
          {
            stdio: 'ignore',
          },
        );
        break;
      } catch {
        execFileSync('sleep', ['0.2']);
      }
    }
  });

  afterAll(() => {
    for (const id of ids) forceRemoveSandbox(id);
    execFileSync('docker', ['rm', '--force', serverName], { stdio: 'ignore' });
    rmSync(work, { recursive: true, force: true });
  });

  /**
   * A repo of its own (a fresh cache key) whose npm gives up after one retry 3 s later: soon, and
   * after the gateway's handshake (well under a second), whose warning needs the build running.
   */
  const repo = (name: string) => {
    const dir = join(work, name);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name, dependencies: { 'left-pad': '1.3.0' } }));
    writeFileSync(
      join(dir, '.npmrc'),
      'fetch-retries=1\nfetch-retry-mintimeout=3000\nfetch-retry-maxtimeout=3000\n',
    );
    return dir;
  };

  /** The create with exactly these settings: no configuration file of the machine's. */
  const create = async (name: string, settings: Record<string, string>) => {
    const id = `sbx-${randomUUID().slice(0, 8)}`;
    ids.push(id);
    const config = join(work, `config-${name}`);
    mkdirSync(config, { recursive: true });
    const env: Record<string, string> = {};
    for (const [key, value] of Object.entries(process.env))
      if (value !== undefined && key !== 'CA_SANDBOX_CA_CERTS') env[key] = value;
    const result = await runBinWithExactEnv(
      ['create', repo(name), '--json', '--name', id, '--network', 'clone-then-cut'],
      {
        ...env,
        ...LOCAL_IMAGES_ENV,
        NO_COLOR: '1',
        XDG_CONFIG_HOME: config,
        CA_SANDBOX_NPM_REGISTRY: registry,
        ...settings,
      },
    );
    return { id, result };
  };

  it('no CA named: exits 1, and the message names the caCertificates setting and its variable', async () => {
    const { id, result } = await create('no-ca', {});
    expect(result.code, result.stderr).toBe(1);
    const error = JSON.parse(result.stderr.trim().split('\n').at(-1) ?? '{}').error;
    expect(error.code).toBe('IMAGE_BUILD_FAILED');
    expect(error.message).toMatch(/SELF_SIGNED|self-signed/);
    expect(error.message).toContain('could not verify a TLS certificate (a TLS-intercepting proxy?)');
    expect(error.message).toContain('caCertificates');
    expect(error.message).toContain('CA_SANDBOX_CA_CERTS');
    // Said beside the install, from one handshake of the gateway's, before npm gives up.
    expect(result.stderr).toMatch(
      /warning: the install's registry [0-9.]+:[0-9]+ presents a certificate the install does not trust \(self-signed certificate\): a TLS-intercepting proxy\?.* or in CA_SANDBOX_CA_CERTS: the clone and the install then trust it\n/,
    );
    expect(remainingObjects(id)).toEqual([]);
  }, 300_000);

  it('a bundle named that did not sign it: the message says the bundle may be the wrong one', async () => {
    const other = join(work, 'other.pem');
    const { id, result } = await create('other-ca', { CA_SANDBOX_CA_CERTS: other });
    expect(result.code, result.stderr).toBe(1);
    const error = JSON.parse(result.stderr.trim().split('\n').at(-1) ?? '{}').error;
    expect(error.code).toBe('IMAGE_BUILD_FAILED');
    expect(error.message).toContain(`although it trusts caCertificates (${other})`);
    expect(result.stderr).toContain(`the bundle of caCertificates (${other}) may lack the CA that signed it`);
    expect(remainingObjects(id)).toEqual([]);
  }, 300_000);

  it('the bundle that signed it named: nothing is said of an untrusted certificate', async () => {
    const { id, result } = await create('right-ca', { CA_SANDBOX_CA_CERTS: join(work, 'server.pem') });
    expect(result.code, result.stderr).toBe(1);
    const error = JSON.parse(result.stderr.trim().split('\n').at(-1) ?? '{}').error;
    // It fails further on (this server is no registry; npm through the proxy checks a name too).
    expect(error.code).toBe('IMAGE_BUILD_FAILED');
    expect(error.message).not.toContain('could not verify a TLS certificate');
    expect(result.stderr).not.toContain('certificate the install does not trust');
    expect(remainingObjects(id)).toEqual([]);
  }, 300_000);
});
