import { execFileSync } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { networkInterfaces, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { crc32 } from 'node:zlib';
import { CACHE_LABEL, sandboxLabels } from '@ca-sandbox/docker';
import { docker } from '@ca-sandbox/docker/cli';

/** Files served by a mirror: path (relative, posix) → content. */
export type MirrorTree = Record<string, string | Buffer>;

/**
 * A package mirror of the test's own: an image FROM the local python base holding `tree` under
 * /srv (a test helper image may hold its content; no bind mount), served by `python3 -m
 * http.server` on Docker's default bridge, where the dependency builds run. Labeled with a sandbox
 * id of its own, removed by `stop()`.
 */
export class Mirror {
  readonly id = `sbx-${randomUUID().slice(0, 8)}`;
  readonly name = `ca-sbx-${this.id}-mirror`;
  url = '';

  /**
   * `npm`: served by a small node server (NPM_SERVER) that writes the URL the client asked by
   * (`http://<Host>`) where a packument says `@REGISTRY@`: a packument names its tarballs by
   * absolute URL, which is known only once the mirror runs.
   */
  constructor(
    private readonly kind: string,
    private readonly tree: MirrorTree,
    private readonly server: 'static' | 'npm' = 'static',
  ) {}

  /** The image is tagged by a hash of its content: a second run reuses it. */
  get image(): string {
    const hash = createHash('sha256');
    for (const [path, content] of Object.entries(this.tree).sort(([a], [b]) => (a < b ? -1 : 1)))
      hash.update(`${path}\0${createHash('sha256').update(content).digest('hex')}\n`);
    return `ca-sbx:test-${this.kind}-mirror-${hash.digest('hex').slice(0, 16)}`;
  }

  /**
   * `publishOn`: also publish the port on this host address (the url then names it): how a client
   * behind the egress gateway reaches the mirror, the way it reaches a registry on the LAN.
   */
  async start(publishOn?: string): Promise<this> {
    const image = this.image;
    const present = await docker(['image', 'inspect', '--', image], { allowFailure: true });
    if (present.exitCode !== 0) {
      const context = mkdtempSync(join(tmpdir(), 'ca-sbx-mirror-'));
      try {
        for (const [path, content] of Object.entries(this.tree)) {
          mkdirSync(dirname(join(context, 'srv', path)), { recursive: true });
          writeFileSync(join(context, 'srv', path), content);
        }
        if (this.server === 'npm') writeFileSync(join(context, 'server.js'), NPM_SERVER);
        writeFileSync(
          join(context, 'Dockerfile'),
          (this.server === 'npm'
            ? [
                'FROM ca-sbx-base:node',
                'COPY srv/ /srv/',
                'COPY server.js /server.js',
                'USER 1000:1000',
                'CMD ["node", "/server.js"]',
                '',
              ]
            : [
                'FROM ca-sbx-base:python',
                'COPY srv/ /srv/',
                'USER 1000:1000',
                'CMD ["python3", "-m", "http.server", "--directory", "/srv", "8000"]',
                '',
              ]
          ).join('\n'),
        );
        await docker(['build', '--quiet', '--label', `${CACHE_LABEL}=1`, '--tag', image, context], {
          timeoutMs: 300_000,
        });
      } finally {
        rmSync(context, { recursive: true, force: true });
      }
    }
    const labels = Object.entries(sandboxLabels(this.id)).flatMap(([k, v]) => ['--label', `${k}=${v}`]);
    await docker([
      'run',
      '-d',
      '--name',
      this.name,
      ...labels,
      '--network',
      'bridge',
      '--read-only',
      '--cap-drop',
      'ALL',
      '--security-opt',
      'no-new-privileges',
      '--user',
      '1000:1000',
      ...(publishOn ? ['--publish', `${publishOn}::8000`] : []),
      image,
    ]);
    const ip = (
      await docker(['inspect', '--format', '{{.NetworkSettings.IPAddress}}', '--', this.name])
    ).stdout.trim();
    this.url = `http://${ip}:8000`;
    if (publishOn) {
      const mapped = (await docker(['port', this.name, '8000/tcp'])).stdout.trim().split('\n')[0] ?? '';
      this.url = `http://${publishOn}:${mapped.slice(mapped.lastIndexOf(':') + 1)}`;
    }
    const probe =
      this.server === 'npm'
        ? [
            'node',
            '-e',
            "require('http').get('http://127.0.0.1:8000/', () => process.exit(0)).on('error', () => process.exit(1))",
          ]
        : [
            'python3',
            '-c',
            "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/', timeout=2)",
          ];
    for (let i = 0; i < 50; i++) {
      const up = await docker(['exec', this.name, ...probe], { allowFailure: true });
      if (up.exitCode === 0) return this;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    throw new Error(`mirror ${this.name} did not come up`);
  }

  async stop(): Promise<void> {
    await docker(['rm', '--force', '--', this.name], { allowFailure: true });
  }
}

/**
 * This host's first IPv4 address off loopback and off docker's bridges: where a LAN mirror would
 * be. A mirror published there is reached by the install through the egress gateway, which refuses
 * private and host ranges unless the user named them, as a configured mirror is.
 */
export function hostAddress(): string {
  for (const [name, addresses] of Object.entries(networkInterfaces())) {
    if (name === 'docker0' || name.startsWith('br-') || name.startsWith('veth')) continue;
    const v4 = addresses?.find((info) => info.family === 'IPv4' && !info.internal);
    if (v4) return v4.address;
  }
  throw new Error('no IPv4 address off loopback on this host');
}

/** The PEP 503 file index pip's configuration names on this machine (`file://…/simple`), if any. */
export async function localPypiIndex(): Promise<string | undefined> {
  let config = '';
  try {
    config = execFileSync('python3', ['-m', 'pip', 'config', 'list'], { encoding: 'utf8' });
  } catch {
    return undefined;
  }
  for (const match of config.matchAll(/file:\/\/(\/[^\s']+\/simple)\b/g)) {
    const dir = match[1] ?? '';
    try {
      readFileSync(join(dir, 'pytest', 'index.html'));
      return dir;
    } catch {
      // not this one
    }
  }
  return undefined;
}

/** A PEP 503 subset of a file index: `simple/<name>/index.html` and the files its links name. */
export function pypiSubset(simpleDir: string, names: readonly string[]): MirrorTree {
  const tree: MirrorTree = {};
  for (const name of names) {
    const page = readFileSync(join(simpleDir, name, 'index.html'), 'utf8');
    tree[`simple/${name}/index.html`] = page;
    for (const match of page.matchAll(/href="\.\.\/\.\.\/(files\/[^"#]+)/g)) {
      const file = match[1] ?? '';
      tree[file] = readFileSync(join(simpleDir, '..', file));
    }
  }
  return tree;
}

/** A zip archive of stored (uncompressed) entries: enough for a Go module zip. */
export function storedZip(files: Record<string, string>): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const [name, text] of Object.entries(files)) {
    const data = Buffer.from(text);
    const nameBytes = Buffer.from(name);
    const crc = crc32(data);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(data.length, 18);
    local.writeUInt32LE(data.length, 22);
    local.writeUInt16LE(nameBytes.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(data.length, 20);
    central.writeUInt32LE(data.length, 24);
    central.writeUInt16LE(nameBytes.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, nameBytes, data);
    centrals.push(central, nameBytes);
    offset += local.length + nameBytes.length + data.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(Object.keys(files).length, 8);
  end.writeUInt16LE(Object.keys(files).length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}

/** Go's `h1:` hash (dirhash Hash1) of files by name. */
export function goH1(files: Record<string, string>): string {
  const lines = Object.keys(files)
    .sort()
    .map(
      (name) =>
        `${createHash('sha256')
          .update(files[name] ?? '')
          .digest('hex')}  ${name}\n`,
    )
    .join('');
  return `h1:${createHash('sha256').update(lines).digest('base64')}`;
}

/**
 * One module version in GOPROXY file layout (`<module>/@v/list`, `.info`, `.mod`, `.zip`) and the
 * two go.sum lines that pin it.
 */
export function goModule(
  path: string,
  version: string,
  files: Record<string, string>,
): { tree: MirrorTree; goSum: string } {
  const goMod = files['go.mod'] ?? `module ${path}\n`;
  const prefix = `${path}@${version}/`;
  const zipped = Object.fromEntries(Object.entries(files).map(([name, text]) => [prefix + name, text]));
  const tree: MirrorTree = {
    [`${path}/@v/list`]: `${version}\n`,
    [`${path}/@v/${version}.info`]: JSON.stringify({ Version: version, Time: '2026-01-01T00:00:00Z' }),
    [`${path}/@v/${version}.mod`]: goMod,
    [`${path}/@v/${version}.zip`]: storedZip(zipped),
  };
  const goSum =
    `${path} ${version} ${goH1(zipped)}\n` + `${path} ${version}/go.mod ${goH1({ 'go.mod': goMod })}\n`;
  return { tree, goSum };
}

/**
 * A Python source archive (sdist) of `name` `version` with an in-tree PEP 517 build backend (no
 * build requirement to fetch): building it runs `onBuild` (python source) first, as a package's own
 * setup.py does at install. Made with the host's tar.
 */
export function pythonSdist(name: string, version: string, onBuild = ''): { file: string; content: Buffer } {
  const dist = `${name.replace(/-/g, '_')}-${version}`;
  const meta = `Metadata-Version: 2.1\nName: ${name}\nVersion: ${version}\n`;
  const backend = `import base64, hashlib, os, zipfile
META = ${JSON.stringify(meta)}
DIST = ${JSON.stringify(dist)}
def get_requires_for_build_wheel(config_settings=None):
    return []
def prepare_metadata_for_build_wheel(d, config_settings=None):
    os.makedirs(os.path.join(d, DIST + ".dist-info"))
    open(os.path.join(d, DIST + ".dist-info", "METADATA"), "w").write(META)
    return DIST + ".dist-info"
def build_wheel(d, config_settings=None, metadata_directory=None):
${(onBuild || 'pass')
  .split('\n')
  .map((line) => `    ${line}`)
  .join('\n')}
    files = {${JSON.stringify(`${name.replace(/-/g, '_')}.py`)}: "VALUE = 1\\n", DIST + ".dist-info/METADATA": META,
             DIST + ".dist-info/WHEEL": "Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"}
    record = []
    wheel = DIST + "-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(d, wheel), "w") as z:
        for path, text in files.items():
            z.writestr(path, text)
            digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
            record.append(f"{path},sha256={digest},{len(text)}")
        record.append(DIST + ".dist-info/RECORD,,")
        z.writestr(DIST + ".dist-info/RECORD", "\\n".join(record) + "\\n")
    return wheel
`;
  const work = mkdtempSync(join(tmpdir(), 'ca-sbx-sdist-'));
  try {
    const root = join(work, `${name}-${version}`);
    mkdirSync(root);
    writeFileSync(join(root, 'PKG-INFO'), meta);
    writeFileSync(
      join(root, 'pyproject.toml'),
      '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n',
    );
    writeFileSync(join(root, 'backend.py'), backend);
    const file = `${name}-${version}.tar.gz`;
    execFileSync('tar', ['czf', file, `${name}-${version}`], { cwd: work });
    return { file, content: readFileSync(join(work, file)) };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** A wheel of `name` `version` (one module, no code run to install it). */
export function pythonWheel(name: string, version: string): { file: string; content: Buffer } {
  const dist = `${name.replace(/-/g, '_')}-${version}`;
  const files = {
    [`${name.replace(/-/g, '_')}.py`]: 'VALUE = 2\n',
    [`${dist}.dist-info/METADATA`]: `Metadata-Version: 2.1\nName: ${name}\nVersion: ${version}\n`,
    [`${dist}.dist-info/WHEEL`]:
      'Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n',
  };
  const record = `${Object.keys(files)
    .map((path) => `${path},,`)
    .join('\n')}\n${dist}.dist-info/RECORD,,\n`;
  return {
    file: `${dist}-py3-none-any.whl`,
    content: storedZip({ ...files, [`${dist}.dist-info/RECORD`]: record }),
  };
}

/** A PEP 503 index (`simple/<name>/index.html`, `files/<file>`) of these distribution files. */
export function pypiTree(packages: Record<string, { file: string; content: Buffer }[]>): MirrorTree {
  const tree: MirrorTree = {};
  for (const [name, dists] of Object.entries(packages)) {
    tree[`simple/${name}/index.html`] =
      `<!DOCTYPE html><html><body>${dists.map((d) => `<a href="../../files/${d.file}">${d.file}</a>`).join('')}</body></html>\n`;
    for (const dist of dists) tree[`files/${dist.file}`] = dist.content;
  }
  return tree;
}

/** The npm mirror's server (Mirror `npm`): files under /srv, packuments with `@REGISTRY@` filled in. */
const NPM_SERVER = `const http = require('http'), fs = require('fs'), path = require('path');
http.createServer((req, res) => {
  let file;
  try { file = path.join('/srv', path.normalize(decodeURIComponent(req.url.split('?')[0]))); } catch { file = ''; }
  if (!file.startsWith('/srv/')) { res.writeHead(404); res.end(); return; }
  fs.readFile(file, (error, body) => {
    if (error) { res.writeHead(404, { 'content-type': 'application/json' }); res.end('{"error":"not found"}'); return; }
    if (file.endsWith('.tgz')) { res.writeHead(200, { 'content-type': 'application/octet-stream' }); res.end(body); return; }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(body.toString('utf8').split('@REGISTRY@').join('http://' + req.headers.host));
  });
}).listen(8000);
`;

/** One version of an npm package for npmTree: its manifest fields and its files (under package/). */
export interface NpmPackage {
  manifest: Record<string, unknown> & { name: string; version: string };
  files?: Record<string, string>;
  /** The packument names its tarball but the mirror does not hold it (a 404, as for a yanked file). */
  missingTarball?: boolean;
}

/** An npm package tarball (`package/…`), made with the host's tar. */
export function npmTarball(pkg: NpmPackage): Buffer {
  const work = mkdtempSync(join(tmpdir(), 'ca-sbx-npm-'));
  try {
    const root = join(work, 'package');
    mkdirSync(root);
    writeFileSync(join(root, 'package.json'), JSON.stringify(pkg.manifest, null, 2));
    for (const [name, text] of Object.entries(pkg.files ?? {})) {
      mkdirSync(dirname(join(root, name)), { recursive: true });
      writeFileSync(join(root, name), text);
    }
    execFileSync('tar', ['czf', 'package.tgz', '--owner=0', '--group=0', 'package'], { cwd: work });
    return readFileSync(join(work, 'package.tgz'));
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/**
 * An npm registry's files for Mirror `npm`: a packument per package at its name (a scoped name is
 * a folder and a file: `@scope/name`, which a client asks for as `/@scope%2fname`) and the tarballs
 * under `tarballs/`. `extra` adds tarballs made elsewhere (a real package manager's, by npm pack).
 */
export function npmTree(
  packages: NpmPackage[],
  extra: { manifest: NpmPackage['manifest']; tarball: Buffer }[] = [],
): MirrorTree {
  const tree: MirrorTree = {};
  const versions = new Map<string, Record<string, unknown>>();
  const add = (manifest: NpmPackage['manifest'], tarball: Buffer, held: boolean) => {
    const file = `tarballs/${manifest.name.replace('/', '-')}-${manifest.version}.tgz`;
    if (held) tree[file] = tarball;
    const integrity = `sha512-${createHash('sha512').update(tarball).digest('base64')}`;
    const shasum = createHash('sha1').update(tarball).digest('hex');
    const entry = versions.get(manifest.name) ?? {};
    entry[manifest.version] = { ...manifest, dist: { tarball: `@REGISTRY@/${file}`, integrity, shasum } };
    versions.set(manifest.name, entry);
  };
  for (const pkg of packages) add(pkg.manifest, npmTarball(pkg), !pkg.missingTarball);
  for (const { manifest, tarball } of extra) add(manifest, tarball, true);
  for (const [name, entry] of versions) {
    const latest = Object.keys(entry).sort().at(-1) ?? '';
    tree[name] = JSON.stringify({ name, 'dist-tags': { latest }, versions: entry });
  }
  return tree;
}
