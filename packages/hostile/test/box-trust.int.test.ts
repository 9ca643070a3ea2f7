import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CA_BUNDLE_PATH, EXTRA_CA_PATH, LABEL_CA, loadExtraCa } from '@ca-sandbox/build';
import { docker } from '@ca-sandbox/docker/cli';
import { execa } from 'execa';
import { GenericContainer, type StartedTestContainer } from 'testcontainers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  cli,
  createBox,
  destroyBox,
  destroyLeftovers,
  execBox,
  hostAddress,
  labeledLeft,
  parseJson,
  RUNTIMES,
} from './_harness.js';

/**
 * An allowlist box behind a TLS-intercepting proxy: tools in it must trust the CA bundle the USER
 * named (CA_SANDBOX_CA_CERTS), and only that one. The "proxy" is an https server of the test's own
 * (a container, published on this host's address, allowed explicitly) whose certificate only a
 * test CA vouches for. The repo ships a CA of its own (a file named like our bundle, `.npmrc` and
 * `.env` settings naming it) and install-time code that tries to add it to the trusted bundle; a
 * second server signed by that CA must stay untrusted, in the install and in the box.
 */
let work: string;
let server: StartedTestContainer;
let address: string;
let trusted: string;
let refused: string;
let rogue: string;
let userBundle: string;
let repo: string;
/** The allowlist box's image (built with the user's bundle): the offline boxes reuse it. */
let trustingImage = '';
const images = new Set<string>();

async function openssl(args: string[]): Promise<void> {
  await execa('openssl', args, { cwd: work });
}

/** A CA (key and certificate in `<name>.key`/`<name>.pem`) and a server certificate for `ip` it signs. */
async function makeCa(name: string, ip: string): Promise<{ ca: string; server: string }> {
  await openssl(
    ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.pem`].concat(
      ['-days', '1', '-subj', `/CN=ca-sandbox ${name} test CA`],
    ),
  );
  await openssl(
    ['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}-srv.key`, '-out', `${name}-srv.csr`].concat([
      '-subj',
      `/CN=${ip}`,
    ]),
  );
  await writeFile(join(work, `${name}-ext.cnf`), `subjectAltName=IP:${ip}\n`);
  await openssl(
    ['x509', '-req', '-in', `${name}-srv.csr`, '-CA', `${name}.pem`, '-CAkey', `${name}.key`].concat([
      '-CAcreateserial',
      '-out',
      `${name}-srv.pem`,
      '-days',
      '1',
      '-extfile',
      `${name}-ext.cnf`,
    ]),
  );
  const read = (file: string) => readFile(join(work, file), 'utf8');
  return {
    ca: await read(`${name}.pem`),
    server: (await read(`${name}-srv.pem`)) + (await read(`${name}-srv.key`)),
  };
}

// Three https servers in one container: 8443 and 8444 with the user's CA (8444 is not allowed),
// 8445 with the repo's CA. Each serves hello.txt and a git repository over dumb http.
const SERVE = [
  'import functools, http.server, ssl, threading',
  'def serve(port, cert):',
  '    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory="/tmp/srv")',
  '    httpd = http.server.ThreadingHTTPServer(("0.0.0.0", port), handler)',
  '    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); ctx.load_cert_chain(cert)',
  '    httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)',
  '    threading.Thread(target=httpd.serve_forever, daemon=True).start()',
  'serve(8443, "/tmp/user.pem"); serve(8444, "/tmp/user.pem"); serve(8445, "/tmp/repo.pem")',
  'threading.Event().wait()',
].join('\n');
const START = [
  'set -e',
  'printf "%s" "$USER_PEM" > /tmp/user.pem; printf "%s" "$REPO_PEM" > /tmp/repo.pem',
  'mkdir -p /tmp/srv; echo "trusted hello" > /tmp/srv/hello.txt',
  'g="git -c user.email=t@example.com -c user.name=t"',
  'cd /tmp; git init -q w; cd w; echo served > README.md; $g add README.md; $g commit -qm init',
  'git clone -q --bare /tmp/w /tmp/srv/repo.git; cd /tmp/srv/repo.git; git update-server-info',
  'exec python3 -c "$SERVE"',
].join('\n');

/** What the repo's install code tries, in pnpm's process: its CA into our bundle, our bundle away. */
function pnpmfile(repoCa: string): string {
  return [
    "const fs = require('fs');",
    `const ca = ${JSON.stringify(repoCa)};`,
    'const out = [];',
    `for (const file of [${JSON.stringify(EXTRA_CA_PATH)}, ${JSON.stringify(CA_BUNDLE_PATH)}]) {`,
    "  try { fs.appendFileSync(file, ca); out.push('WROTE ' + file); } catch (e) { out.push('REFUSED ' + file + ' ' + e.code); }",
    '}',
    "try { fs.renameSync('/etc/ca-sandbox', '/tmp/moved'); out.push('WROTE rename'); } catch (e) { out.push('REFUSED rename ' + e.code); }",
    "try { fs.writeFileSync('/etc/ssl/certs/ca-certificates.crt', ca); out.push('WROTE system'); } catch (e) { out.push('REFUSED system ' + e.code); }",
    "for (const name of ['NODE_EXTRA_CA_CERTS', 'SSL_CERT_FILE', 'GIT_SSL_CAINFO', 'REQUESTS_CA_BUNDLE']) out.push('env ' + name + '=' + (process.env[name] || ''));",
    "fs.writeFileSync('/deps/trust-install.txt', out.join('\\n') + '\\n');",
    'module.exports = {};',
    '',
  ].join('\n');
}

/** node's fetch of `url` in the box: `OK <status> <body>` or `FAIL <cause>`. */
const FETCH = `fetch(process.argv[1], { signal: AbortSignal.timeout(20000) }).then(
  async (r) => console.log('OK ' + r.status + ' ' + (await r.text()).trim()),
  (e) => console.log('FAIL ' + (e.cause?.code || e.cause?.message || e.message)));`;
const PYTHON = `import sys, urllib.request
try: print("OK " + urllib.request.urlopen(sys.argv[1], timeout=20).read().decode().strip())
except Exception as e: print("FAIL " + str(e))`;

const url = (port: string, path: string) => `https://${port}/${path}`;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'ca-hostile-trust-'));
  address = await hostAddress();
  const user = await makeCa('user', address);
  const repoCa = await makeCa('repo', address);
  server = await new GenericContainer('ca-sbx-base:python')
    .withEnvironment({ USER_PEM: user.server, REPO_PEM: repoCa.server, SERVE })
    .withCommand(['sh', '-c', START])
    .withExposedPorts(8443, 8444, 8445)
    .start();
  trusted = `${address}:${server.getMappedPort(8443)}`;
  refused = `${address}:${server.getMappedPort(8444)}`;
  rogue = `${address}:${server.getMappedPort(8445)}`;
  // The user's setting: this machine's bundle (its TLS proxy, for the registry) and the test CA.
  const host = process.env.CA_SANDBOX_CA_CERTS;
  userBundle = join(work, 'user-bundle.pem');
  await writeFile(userBundle, `${host ? await readFile(host, 'utf8') : ''}\n${user.ca}`);
  repo = join(work, 'repo');
  await mkdir(repo);
  await writeFile(
    join(repo, 'package.json'),
    JSON.stringify({ name: 'trust-probe', version: '1.0.0', private: true, packageManager: 'pnpm@9.15.9' }),
  );
  await writeFile(join(repo, '.pnpmfile.cjs'), pnpmfile(repoCa.ca));
  // Files named like ours, and settings that name them: none of it may be trusted.
  for (const name of ['extra-ca.pem', 'ca-bundle.pem', 'ca-certificates.crt'])
    await writeFile(join(repo, name), repoCa.ca);
  await writeFile(join(repo, '.npmrc'), 'cafile=./extra-ca.pem\nNODE_EXTRA_CA_CERTS=./extra-ca.pem\n');
  await writeFile(join(repo, '.env'), 'NODE_EXTRA_CA_CERTS=./extra-ca.pem\nSSL_CERT_FILE=./ca-bundle.pem\n');
}, 120_000);

afterAll(async () => {
  await destroyLeftovers();
  await server?.stop();
  if (work) await rm(work, { recursive: true, force: true });
  if (images.size) await docker(['image', 'rm', '--force', ...images], { allowFailure: true });
});

describe("an allowlist box trusts the user's CA bundle, and only that one", () => {
  it("node fetch, git and python reach the allowed https host; the unlisted one is refused by the gateway; the repo's CA is never trusted", async () => {
    const box = await createBox(repo, {
      network: 'allowlist',
      extra: ['--allow', trusted, '--allow', rogue, '--allow', 'registry.npmjs.org'],
      env: { CA_SANDBOX_CA_CERTS: userBundle },
    });
    images.add(box.image);
    trustingImage = box.image;
    const run = async (argv: string[]) => {
      const result = await execBox(box.id, argv, ['--timeout', '120']);
      return `${result.stdout}${result.stderr}`.trim();
    };
    // The image holds the user's certificates, root's, and says which bundle in its label.
    const user = loadExtraCa(userBundle);
    const label = await docker([
      'image',
      'inspect',
      '--format',
      `{{index .Config.Labels "${LABEL_CA}"}}`,
      box.image,
    ]);
    expect(label.stdout.trim()).toBe(user.hash);
    const files = await run([
      'sh',
      '-c',
      `sha256sum ${EXTRA_CA_PATH}; stat -c '%u:%g %a %n' /etc/ca-sandbox ${EXTRA_CA_PATH} ${CA_BUNDLE_PATH}`,
    ]);
    expect(files).toContain(`${user.hash}  ${EXTRA_CA_PATH}`);
    expect(files).toContain(`0:0 755 /etc/ca-sandbox`);
    expect(files).toContain(`0:0 644 ${CA_BUNDLE_PATH}`);

    // The repo's install code could change none of it, and the install trusted our files only.
    const install = await run(['cat', '/deps/trust-install.txt']);
    expect(install).not.toContain('WROTE');
    expect(install).toContain(`REFUSED ${EXTRA_CA_PATH} EACCES`);
    expect(install).toContain(`REFUSED ${CA_BUNDLE_PATH} EACCES`);
    expect(install).toContain(`env NODE_EXTRA_CA_CERTS=${EXTRA_CA_PATH}`);
    expect(install).toContain(`env SSL_CERT_FILE=${CA_BUNDLE_PATH}`);

    // node's fetch through the gateway, with the user's CA; no warning on a node start.
    expect(await run(['node', '-e', FETCH, url(trusted, 'hello.txt')])).toBe('OK 200 trusted hello');
    const plain = await execBox(box.id, ['node', '-e', 'console.log("quiet")']);
    expect(plain.stdout).toBe('quiet\n');
    expect(plain.stderr).toBe('');
    // Controls (the test is not vacuous): without the proxy switch node has no route; without
    // the CA variable it does not trust the server.
    expect(
      await run(['env', '-u', 'NODE_USE_ENV_PROXY', 'node', '-e', FETCH, url(trusted, 'hello.txt')]),
    ).toMatch(/^FAIL /);
    expect(
      await run(['env', '-u', 'NODE_EXTRA_CA_CERTS', 'node', '-e', FETCH, url(trusted, 'hello.txt')]),
    ).toMatch(/^FAIL .*(CERT|SIGNATURE|ISSUER)/);
    // git (libcurl) and python (OpenSSL's default file) with the combined bundle.
    expect(await run(['git', 'ls-remote', url(trusted, 'repo.git')])).toMatch(/\trefs\/heads\//);
    expect(await run(['python3', '-c', PYTHON, url(trusted, 'hello.txt')])).toBe('OK trusted hello');
    expect(await run(['env', '-u', 'GIT_SSL_CAINFO', 'git', 'ls-remote', url(trusted, 'repo.git')])).toMatch(
      /certificate|SSL/i,
    );

    // Not on the list: the gateway refuses it, whatever the tool.
    expect(await run(['node', '-e', FETCH, url(refused, 'hello.txt')])).toMatch(/^FAIL /);
    expect(await run(['python3', '-c', PYTHON, url(refused, 'hello.txt')])).toMatch(/^FAIL .*403/);
    // On the list but signed by the repo's CA: trusted by no tool, from the repo's folder where
    // its .npmrc and .env name that CA.
    expect(await run(['node', '-e', FETCH, url(rogue, 'hello.txt')])).toMatch(
      /^FAIL .*(CERT|SIGNATURE|ISSUER)/,
    );
    expect(await run(['git', 'ls-remote', url(rogue, 'repo.git')])).toMatch(/certificate|SSL/i);
    expect(await run(['python3', '-c', PYTHON, url(rogue, 'hello.txt')])).toMatch(
      /^FAIL .*CERTIFICATE_VERIFY_FAILED/,
    );

    // The box's loopback stays local (NO_PROXY): a server of the box answers node's fetch.
    const local = await run([
      'node',
      '-e',
      `const s = require('http').createServer((q, r) => r.end('local')).listen(0, '127.0.0.1', () =>
        fetch('http://127.0.0.1:' + s.address().port).then(async (r) => { console.log('OK ' + (await r.text())); s.close(); },
          (e) => { console.log('FAIL ' + (e.cause?.code || e.message)); s.close(); }));`,
    ]);
    expect(local).toBe('OK local');

    const record = parseJson<{ phase: string; destination: string; allowed: boolean }[]>(
      await cli(['egress', box.id, '--json']),
    );
    expect(record).toContainEqual(
      expect.objectContaining({ phase: 'box', destination: trusted, allowed: true }),
    );
    expect(record).toContainEqual(
      expect.objectContaining({ phase: 'box', destination: refused, allowed: false }),
    );
    await destroyBox(box.id);
    expect(await labeledLeft(box.id)).toEqual([]);
  }, 900_000);

  for (const runtime of RUNTIMES)
    it(`an offline box from the same image gets no proxy and no CA variable (${runtime})`, async () => {
      const box = await createBox(repo, { runtime, env: { CA_SANDBOX_CA_CERTS: userBundle } });
      images.add(box.image);
      // The same cached image (it holds the bundle): the env is clean by policy, not by chance.
      if (trustingImage) expect(box.image).toBe(trustingImage);
      const env = await execBox(box.id, ['env']);
      // Set, with a value (the run blanks the docker client's proxy names: `HTTPS_PROXY=`).
      const set = env.stdout
        .split('\n')
        .filter((line) =>
          /^[^=]*(PROXY|proxy|CA_CERTS|CERT_FILE|CAINFO|CA_BUNDLE|PIP_CERT|NODE_OPTIONS)[^=]*=./.test(line),
        );
      expect(set).toEqual([]);
      expect(await execBox(box.id, ['node', '-e', FETCH, url(trusted, 'hello.txt')])).toMatchObject({
        stdout: expect.stringMatching(/^FAIL /),
      });
      await destroyBox(box.id);
      expect(await labeledLeft(box.id)).toEqual([]);
    }, 600_000);
});
