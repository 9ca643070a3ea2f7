import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { sandboxLabels } from '@ca-sandbox/docker';
import { docker } from '@ca-sandbox/docker/cli';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { destroyAll, labeledObjects, tempDir, uniqueId } from '../test/helpers.js';
import { createSandbox } from './create/index.js';
import { CloneFailedError } from './errors.js';
import { execInSandbox } from './exec.js';

// A TLS-intercepting proxy stands between the clone and the server here: an https git server of
// the test's own (dumb http protocol) whose certificate only a CA of the test's own vouches for.
const created = new Set<string>();
const server = uniqueId(created);
const serverName = `ca-sbx-${server}-gitserver`;
let dir = '';
let url = '';

function openssl(args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
}

beforeAll(async () => {
  dir = await tempDir('ca-lc-clone-ca-');
  const labels = Object.entries(sandboxLabels(server)).flatMap(([k, v]) => ['--label', `${k}=${v}`]);
  await docker(
    [
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
    ].concat(['--cap-drop', 'ALL', '--user', '1000:1000', 'ca-sbx-base:python', 'sleep', 'infinity']),
  );
  const ip = (
    await docker(['inspect', '--format', '{{.NetworkSettings.IPAddress}}', serverName])
  ).stdout.trim();
  openssl(
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      'ca.key',
      '-out',
      'ca.pem',
      '-days',
      '1',
    ].concat(['-subj', '/CN=ca-sandbox test CA']),
  );
  openssl([
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'server.key',
    '-out',
    'server.csr',
    '-subj',
    `/CN=${ip}`,
  ]);
  execFileSync('sh', ['-c', `printf 'subjectAltName=IP:${ip}\\n' > ext.cnf`], { cwd: dir });
  openssl(
    ['x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial'].concat([
      '-out',
      'server.pem',
      '-days',
      '1',
      '-extfile',
      'ext.cnf',
    ]),
  );
  const pem = readFileSync(join(dir, 'server.pem'), 'utf8') + readFileSync(join(dir, 'server.key'), 'utf8');
  await docker(['exec', '-i', serverName, 'sh', '-c', 'cat > /tmp/server.pem'], { input: pem });
  const git = 'git -c user.email=t@example.com -c user.name=t';
  await docker([
    'exec',
    serverName,
    'sh',
    '-c',
    [
      'set -e; cd /tmp; git init -q w; cd w; echo "served over tls" > README.md',
      `${git} add README.md; ${git} commit -qm init`,
      'git clone -q --bare /tmp/w /tmp/srv/repo.git; cd /tmp/srv/repo.git; git update-server-info',
    ].join('\n'),
  ]);
  // git's smart http (the clone is shallow) through git http-backend, run as CGI by a few lines.
  const serve = [
    'import http.server, os, ssl, subprocess',
    'class Git(http.server.BaseHTTPRequestHandler):',
    '    def handle_git(self):',
    '        path, _, query = self.path.partition("?")',
    '        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))',
    '        env = dict(os.environ, GIT_PROJECT_ROOT="/tmp/srv", GIT_HTTP_EXPORT_ALL="1", PATH_INFO=path,',
    '                   QUERY_STRING=query, REQUEST_METHOD=self.command, REMOTE_ADDR="127.0.0.1",',
    '                   CONTENT_TYPE=self.headers.get("Content-Type") or "", CONTENT_LENGTH=str(len(body)))',
    '        out = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True).stdout',
    '        head, _, payload = out.partition(b"\\r\\n\\r\\n")',
    '        headers = [line.split(": ", 1) for line in head.decode().split("\\r\\n") if ": " in line]',
    '        status = dict(headers).get("Status", "200 OK").split(" ", 1)',
    '        self.send_response(int(status[0]))',
    '        for key, value in headers:',
    '            if key != "Status": self.send_header(key, value)',
    '        self.send_header("Content-Length", str(len(payload)))',
    '        self.end_headers()',
    '        self.wfile.write(payload)',
    '    do_GET = do_POST = handle_git',
    'httpd = http.server.ThreadingHTTPServer(("0.0.0.0", 8443), Git)',
    'ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); ctx.load_cert_chain("/tmp/server.pem")',
    'httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)',
    'httpd.serve_forever()',
  ].join('\n');
  await docker(['exec', '-d', serverName, 'python3', '-c', serve]);
  url = `https://${ip}:8443/repo.git`;
  for (let i = 0; i < 50; i++) {
    const up = await docker(
      [
        'exec',
        serverName,
        'sh',
        '-c',
        'ss -ltn 2>/dev/null | grep -q 8443 || python3 -c "import socket; socket.create_connection((\'127.0.0.1\', 8443), 1)"',
      ],
      { allowFailure: true },
    );
    if (up.exitCode === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
});

afterAll(async () => {
  await docker(['rm', '--force', '--', serverName], { allowFailure: true });
  await destroyAll(created);
  rmSync(dir, { recursive: true, force: true });
});

async function withCa<T>(value: string | undefined, fn: () => Promise<T>): Promise<T> {
  const before = process.env.CA_SANDBOX_CA_CERTS;
  if (value === undefined) delete process.env.CA_SANDBOX_CA_CERTS;
  else process.env.CA_SANDBOX_CA_CERTS = value;
  try {
    return await fn();
  } finally {
    if (before === undefined) delete process.env.CA_SANDBOX_CA_CERTS;
    else process.env.CA_SANDBOX_CA_CERTS = before;
  }
}

// The https server is a container on the default bridge: these clones join the bridge directly
// (cloneNetwork), since the egress gateway's own network cannot reach other docker networks.
describe('the clone behind a TLS-intercepting proxy (real engine)', () => {
  it('fails on the unknown CA without CA_SANDBOX_CA_CERTS, and leaves nothing', async () => {
    const id = uniqueId(created);
    const error = await withCa(undefined, () =>
      createSandbox({ source: url, name: id, cloneNetwork: 'bridge' }),
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CloneFailedError);
    expect((error as Error).message).toMatch(/certificate|SSL/i);
    expect(await labeledObjects(id)).toEqual([]);
  });

  it('clones with the bundle named by CA_SANDBOX_CA_CERTS; the box never gets it', async () => {
    const id = uniqueId(created);
    const record = await withCa(join(dir, 'ca.pem'), () =>
      createSandbox({ source: url, name: id, cloneNetwork: 'bridge' }),
    );
    expect(record.id).toBe(id);
    const readme = await execInSandbox(id, ['cat', 'README.md']);
    expect(readme.stdout).toBe('served over tls\n');
    const env = await execInSandbox(id, [
      'sh',
      '-c',
      'env; ls /tmp; cat /etc/ssl/certs/ca-certificates.crt | grep -c "BEGIN CERT" || true',
    ]);
    expect(env.stdout).not.toMatch(/GIT_SSL_CAINFO|ca-sbx-ca\.pem/);
  });
});
