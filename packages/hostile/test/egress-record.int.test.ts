import { mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LABEL_ID, LABEL_ROLE } from '@ca-sandbox/docker';
import { docker } from '@ca-sandbox/docker/cli';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  cli,
  createBox,
  destroyBox,
  destroyLeftovers,
  execBox,
  labeledLeft,
  parseJson,
  RUNTIMES,
} from './_harness.js';

/**
 * The egress record (create's log, the box's label, `ca-sandbox egress`) says which places the
 * clone, the install and the box were allowed to reach. squid answers some requests itself before
 * any rule (malformed, unsupported: 400, 505, ...) and logs their raw request target: a box or an
 * install code could make its record show "allowed" for a place the gateway never let through, or
 * the gateway's own "log cut" note. These requests are sent raw to the proxy the install and the
 * box are given.
 */
const FORGE = `
const net = require('net');
const proxy = new URL(process.env.HTTPS_PROXY || process.env.https_proxy);
const requests = [
  'GET forged.example:443 HTTP/1.1\\r\\nHost: forged.example\\r\\n\\r\\n',
  'GET http://forged.example/ HTTP/9.9\\r\\nHost: forged.example\\r\\n\\r\\n',
  'GET (gateway-log-cut-at-16MiB:later-requests-not-recorded) HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n',
];
const send = (request) => new Promise((done) => {
  const s = net.connect({ host: proxy.hostname, port: Number(proxy.port) });
  let head = '';
  s.setTimeout(8000, () => { s.destroy(); done('timeout'); });
  s.on('connect', () => s.write(request));
  s.on('data', (d) => { head += d; if (head.includes('\\r\\n')) { s.destroy(); done(head.split(' ')[1]); } });
  s.on('error', (e) => done(e.code));
});
(async () => {
  const codes = [];
  for (const request of requests) codes.push(await send(request));
  console.log('answered ' + codes.join(' '));
})();
`;

const CUT = '(gateway-log-cut-at-16MiB:later-requests-not-recorded)';

interface Row {
  phase: string;
  destination: string;
  allowed: boolean;
}

/** The record names the forged requests, refused, and shows neither a forged place nor a cut. */
function expectNoForgery(rows: Row[], phase: string): void {
  const forged = rows.filter((row) => row.destination.includes('forged.example') || row.destination === CUT);
  expect(forged.filter((row) => row.allowed)).toEqual([]);
  expect(rows.filter((row) => row.destination === CUT)).toEqual([]);
  // Not vacuous: the requests reached the gateway and are in the record, as refused.
  expect(forged).toContainEqual(expect.objectContaining({ phase, allowed: false }));
}

let work: string;
/** One repo per runtime: each create installs afresh (a cache hit would run no install code). */
const pnpmfileRepos = new Map<string, string>();
let boxRepo: string;
/** The deps images the installs made: removed, so that a rerun installs (and forges) again. */
const images = new Set<string>();

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'ca-hostile-egress-record-'));
  for (const runtime of RUNTIMES) {
    const repo = join(work, `pnpmfile-${runtime}`);
    await mkdir(repo);
    await writeFile(
      join(repo, 'package.json'),
      JSON.stringify({
        name: `egress-forge-${runtime}`,
        version: '1.0.0',
        private: true,
        packageManager: 'pnpm@9.15.9',
      }),
    );
    await writeFile(
      join(repo, '.pnpmfile.cjs'),
      [
        `require('node:child_process').execFileSync(process.execPath, ['-e', ${JSON.stringify(FORGE)}], { stdio: 'inherit' });`,
        'module.exports = {};',
        '',
      ].join('\n'),
    );
    pnpmfileRepos.set(runtime, repo);
  }
  boxRepo = join(work, 'box');
  await mkdir(boxRepo);
  await writeFile(join(boxRepo, 'package.json'), JSON.stringify({ name: 'egress-forge-box', private: true }));
  await writeFile(join(boxRepo, 'forge.js'), FORGE);
});

afterAll(async () => {
  await destroyLeftovers();
  if (images.size) await docker(['image', 'rm', '--force', ...images], { allowFailure: true });
  await rm(work, { recursive: true, force: true });
});

describe('the egress record cannot be forged with requests squid rejects before its rules', () => {
  for (const runtime of RUNTIMES) {
    it(`install code (.pnpmfile.cjs) under ${runtime}`, async () => {
      const box = await createBox(pnpmfileRepos.get(runtime) as string, {
        network: 'clone-then-cut',
        runtime,
      });
      images.add(box.image);
      const record = await cli(['egress', box.id, '--json']);
      expect(record.exitCode, record.stderr).toBe(0);
      expectNoForgery(parseJson<Row[]>(record), 'install');
      await destroyBox(box.id);
      expect(await labeledLeft(box.id)).toEqual([]);
    });
  }

  // An allowlist box runs under runc only (create refuses allowlist with runsc).
  it('a box on an allowlist (runc)', async () => {
    const box = await createBox(boxRepo, { network: 'allowlist', extra: ['--allow', 'registry.npmjs.org'] });
    const run = await execBox(box.id, ['node', 'forge.js'], ['--timeout', '60']);
    expect(run.stdout).toContain('answered 400 505 400');
    const record = await cli(['egress', box.id, '--json']);
    expect(record.exitCode, record.stderr).toBe(0);
    expectNoForgery(parseJson<Row[]>(record), 'box');
    await destroyBox(box.id);
    expect(await labeledLeft(box.id)).toEqual([]);
  });
});

describe('the gateway log on the host', () => {
  it('a box flooding its gateway with URLs of raw 0xff bytes cannot grow its log file past the cap (runc)', async () => {
    const box = await createBox(boxRepo, { network: 'allowlist', extra: ['--allow', 'registry.npmjs.org'] });
    // 3,000 refused requests whose URL is 6,000 bytes 0xff, on one kept-alive connection: squid
    // logs the raw bytes, the daemon's json-file writes each as `\ufffd` (6 bytes), so about
    // 100 MB on the host's disk if the cap counted the bytes squid wrote.
    const flood = [
      "const net = require('net');",
      'const proxy = new URL(process.env.HTTP_PROXY || process.env.http_proxy);',
      'const s = net.connect({ host: proxy.hostname, port: Number(proxy.port) });',
      "const request = Buffer.concat([Buffer.from('GET http://flood.invalid/'), Buffer.alloc(6000, 0xff), Buffer.from(' HTTP/1.1\\r\\nHost: flood.invalid\\r\\n\\r\\n')]);",
      "let answered = 0, buffered = '';",
      "s.on('connect', () => s.write(request));",
      "s.on('data', (d) => { buffered += d; let at; while ((at = buffered.indexOf('HTTP/1.1 403')) >= 0) { buffered = buffered.slice(at + 12); answered++; if (answered < 3000) s.write(request); else { console.log('answered ' + answered); s.destroy(); } } });",
      "s.on('close', () => { if (answered < 3000) console.log('closed after ' + answered); });",
    ].join('\n');
    const run = await execBox(box.id, ['node', '-e', flood], ['--timeout', '300']);
    expect(run.stdout).toContain('answered 3000');
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
    expect((await stat(logPath)).size).toBeLessThan(18 * 1024 * 1024);
    const record = await cli(['egress', box.id, '--json']);
    expect(record.exitCode, record.stderr).toBe(0);
    expect(parseJson<Row[]>(record)).toContainEqual(
      expect.objectContaining({ phase: 'box', allowed: false, destination: CUT }),
    );
    await destroyBox(box.id);
    expect(await labeledLeft(box.id)).toEqual([]);
  }, 600_000);
});
