import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sandboxLabels } from '@ca-sandbox/docker';
import { docker } from '@ca-sandbox/docker/cli';
import { pack } from 'tar-stream';

/** A file's content, or a symlink to `target`. */
export type FixtureEntry = string | { symlink: string };
export type FixtureTree = Record<string, FixtureEntry>;

export const HELPER_IMAGE = process.env.CA_SANDBOX_HELPER_IMAGE ?? 'ca-sbx-base:git';

/** The test containers run as the run package runs boxes (this is test scaffolding, not runContainer). */
const HARDENED = [
  '--user',
  '1000:1000',
  '--cap-drop',
  'ALL',
  '--read-only',
  '--security-opt',
  'no-new-privileges',
  '--network',
  'none',
];

/** Files of a fixture folder, recursively, as a FixtureTree. */
export function readFixture(dir: string, prefix = ''): FixtureTree {
  const tree: FixtureTree = {};
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isDirectory()) Object.assign(tree, readFixture(join(dir, entry.name), rel));
    else tree[rel] = readFileSync(join(dir, entry.name), 'utf8');
  }
  return tree;
}

async function tarOf(tree: FixtureTree): Promise<Buffer> {
  const tar = pack();
  for (const [name, entry] of Object.entries(tree)) {
    // Scripts (#!) are executable, as git checks them out.
    const mode = typeof entry === 'string' && entry.startsWith('#!') ? 0o755 : 0o644;
    if (typeof entry === 'string') tar.entry({ name, mode, uid: 1000, gid: 1000 }, entry);
    else tar.entry({ name, type: 'symlink', linkname: entry.symlink, uid: 1000, gid: 1000 });
  }
  tar.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of tar) chunks.push(Buffer.from(chunk as Uint8Array));
  return Buffer.concat(chunks);
}

/**
 * A labeled volume holding a fixture repo and a hardened helper container with it at /work/repo
 * (plain docker commands: the test stands in for the lifecycle's clone step).
 */
export class FixtureRepo {
  readonly id = `sbx-${randomUUID().slice(0, 8)}`;
  readonly volume = `ca-sbx-${this.id}`;
  readonly container = `ca-sbx-${this.id}-helper`;

  async start(tree: FixtureTree): Promise<this> {
    const labels = sandboxLabels(this.id);
    const labelArgs = Object.entries(labels).flatMap(([k, v]) => ['--label', `${k}=${v}`]);
    await docker(['volume', 'create', ...labelArgs, '--', this.volume]);
    await docker([
      'run',
      '-d',
      '--name',
      this.container,
      ...HARDENED,
      '--tmpfs',
      '/tmp',
      ...labelArgs,
      '--mount',
      `type=volume,src=${this.volume},dst=/work/repo`,
      HELPER_IMAGE,
      'sleep',
      'infinity',
    ]);
    await this.write(tree);
    return this;
  }

  async write(tree: FixtureTree): Promise<void> {
    await docker(['exec', '-i', this.container, 'tar', '-x', '-C', '/work/repo'], {
      input: await tarOf(tree),
    });
  }

  async exec(script: string): Promise<string> {
    return (await docker(['exec', this.container, 'sh', '-c', script])).stdout;
  }

  /** Runs `script` in a box of `image` (hardened like the run package does) with the volume at /work/repo. */
  async runBox(
    image: string,
    script: string,
    timeoutMs = 180_000,
  ): Promise<{ exitCode: number; stdout: string; stderr: string }> {
    return docker(
      [
        'run',
        '--rm',
        ...HARDENED,
        '--tmpfs',
        '/tmp:exec',
        '--env',
        'HOME=/tmp',
        '--workdir',
        '/work/repo',
        ...Object.entries(sandboxLabels(this.id)).flatMap(([k, v]) => ['--label', `${k}=${v}`]),
        '--mount',
        `type=volume,src=${this.volume},dst=/work/repo`,
        image,
        'sh',
        '-c',
        script,
      ],
      { allowFailure: true, timeoutMs },
    );
  }

  /** Starts a long-running box of `image` (hardened as runBox) with the volume; returns its name. */
  async startBox(image: string): Promise<string> {
    const name = `${this.container.replace(/-helper$/, '')}-box${this.boxes.length}`;
    this.boxes.push(name);
    await docker([
      'run',
      '-d',
      '--name',
      name,
      ...HARDENED,
      '--tmpfs',
      '/tmp:exec',
      '--workdir',
      '/work/repo',
      ...Object.entries(sandboxLabels(this.id)).flatMap(([k, v]) => ['--label', `${k}=${v}`]),
      '--mount',
      `type=volume,src=${this.volume},dst=/work/repo`,
      image,
      'sleep',
      'infinity',
    ]);
    return name;
  }

  /**
   * Runs `script` with sh in a container started by startBox. On the time limit the docker client
   * is stopped and may exit 0 with part of the output: give a slow script a longer `timeoutMs`.
   */
  async execIn(
    container: string,
    script: string,
    timeoutMs = 180_000,
  ): Promise<{ exitCode: number; stdout: string; stderr: string }> {
    return docker(['exec', container, 'sh', '-c', script], { allowFailure: true, timeoutMs });
  }

  private readonly boxes: string[] = [];

  async cleanup(): Promise<void> {
    if (this.boxes.length) await docker(['rm', '-f', '--', ...this.boxes], { allowFailure: true });
    await docker(['rm', '-f', '--', this.container], { allowFailure: true });
    await docker(['volume', 'rm', '-f', '--', this.volume], { allowFailure: true });
  }
}

/** Removes images by reference; absent ones are fine. */
export async function removeImages(images: Iterable<string>): Promise<void> {
  const list = [...new Set(images)];
  if (list.length) await docker(['image', 'rm', '--force', ...list], { allowFailure: true });
}
