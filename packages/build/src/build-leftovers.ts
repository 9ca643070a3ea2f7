import { lstat, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  BOX_USER,
  BUILD_LABEL,
  BUILD_LABEL_DEPHASH,
  BUILD_LABEL_REPO,
  DEPS_SRC,
  docker,
  REPO_DIR,
  SANDBOX_LABEL,
} from '@ca-sandbox/docker';

/** The build context directories: `<tmpdir>/ca-sbx-build-<pid of the building process>-<random>`. */
export const BUILD_DIR_PREFIX = 'ca-sbx-build-';
const BUILD_DIR = /^ca-sbx-build-(?:([1-9][0-9]{0,9})-)?[A-Za-z0-9]{6}$/;
/** A context directory without a pid (made before pids were in the name) is stale after this. */
const UNOWNED_DIR_STALE_MS = 24 * 3_600_000;

/** Text of our first RUN: in `docker history` it marks an image built from our Dockerfile. */
export const OWN_HISTORY_MARK = `mkdir -p ${DEPS_SRC} ${REPO_DIR} && chown ${BOX_USER}`;

/** The context directory prefix for this process (a prune elsewhere can tell whether we still run). */
export function buildDirPrefix(): string {
  return join(tmpdir(), `${BUILD_DIR_PREFIX}${process.pid}-`);
}

/** What failed, killed or interrupted builds left: each provably made by our Dockerfile. */
export interface BuildLeftovers {
  /** Dangling image ids (full `sha256:`), the leaves of a build that never got its tag. */
  images: string[];
  /** Stopped build containers (names) that run one of our RUN steps. */
  containers: string[];
  /** Context directories of builds whose process is gone. */
  directories: string[];
}

export interface BuildLeftoverScope {
  /** Only leftovers of builds of this (sanitised) repo name: label `ca.sandbox.build.repo`. */
  repo?: string;
  /** ... and of this dephash. */
  dephash?: string;
  /** Only context directories of these process ids (a scoped removal never guesses). */
  pids?: readonly number[];
}

async function lines(argv: string[]): Promise<string[]> {
  const { stdout } = await docker(argv);
  return stdout
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
}

function scopeFilters(scope: BuildLeftoverScope): string[] {
  return [
    '--filter',
    `label=${BUILD_LABEL}=1`,
    ...(scope.repo ? ['--filter', `label=${BUILD_LABEL_REPO}=${scope.repo}`] : []),
    ...(scope.dephash ? ['--filter', `label=${BUILD_LABEL_DEPHASH}=${scope.dephash}`] : []),
  ];
}

/**
 * Dangling images of ours: labeled by our Dockerfile's first instruction, or (unscoped only, for
 * builds older than that label) whose history holds our first RUN. Untagged images whose labels
 * and history say nothing of us are never listed.
 */
async function danglingImages(scope: BuildLeftoverScope): Promise<string[]> {
  const base = ['image', 'ls', '--no-trunc', '--filter', 'dangling=true', '--format', '{{.ID}}'];
  const labeled = await lines([...base, ...scopeFilters(scope)]);
  if (scope.repo || scope.dephash) return labeled;
  const unlabeled = (await lines(base)).filter((id) => !labeled.includes(id));
  const byHistory: string[] = [];
  for (const id of unlabeled) {
    const history = await docker(['image', 'history', '--no-trunc', '--format', '{{.CreatedBy}}', id], {
      allowFailure: true,
    });
    if (history.exitCode === 0 && history.stdout.includes(OWN_HISTORY_MARK)) byHistory.push(id);
  }
  return [...labeled, ...byHistory];
}

/** True for the Cmd of one of our RUN steps (the root set-up or the no-new-privs install). */
export function isOwnBuildCommand(cmd: unknown): boolean {
  if (!Array.isArray(cmd) || !cmd.every((word) => typeof word === 'string')) return false;
  const words = cmd as string[];
  if (words[0] === '/usr/bin/setpriv' && words[1] === '--no-new-privs') return true;
  return words[0] === '/bin/sh' && words[1] === '-c' && (words[2] ?? '').startsWith(OWN_HISTORY_MARK);
}

/** Stopped containers of our build steps: build label, no sandbox label, one of our RUN commands. */
async function stoppedBuildContainers(scope: BuildLeftoverScope): Promise<string[]> {
  const ids = await lines([
    'container',
    'ls',
    '--all',
    '--no-trunc',
    ...scopeFilters(scope),
    '--filter',
    'status=created',
    '--filter',
    'status=exited',
    '--filter',
    'status=dead',
    '--format',
    '{{.ID}}',
  ]);
  if (ids.length === 0) return [];
  const inspected = await docker(['container', 'inspect', '--', ...ids], { allowFailure: true });
  let docs: unknown;
  try {
    docs = JSON.parse(inspected.stdout || '[]');
  } catch {
    return [];
  }
  if (!Array.isArray(docs)) return [];
  return docs.flatMap((doc) => {
    const d = doc as {
      Name?: unknown;
      State?: { Running?: unknown };
      Config?: { Cmd?: unknown; Labels?: Record<string, string> | null };
    };
    const ours =
      typeof d.Name === 'string' &&
      d.State?.Running === false &&
      d.Config?.Labels?.[SANDBOX_LABEL] === undefined &&
      d.Config?.Labels?.[BUILD_LABEL] === '1' &&
      isOwnBuildCommand(d.Config?.Cmd);
    return ours ? [(d.Name as string).replace(/^\//, '')] : [];
  });
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, under another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Context directories whose build process is gone: real directories (not links) owned by us,
 * named with a pid that no longer runs (or, without a pid, untouched for a day).
 */
export async function staleBuildDirectories(
  scope: BuildLeftoverScope = {},
  root = tmpdir(),
  now = Date.now(),
): Promise<string[]> {
  const entries = await readdir(root).catch(() => [] as string[]);
  const uid = process.getuid?.();
  const stale: string[] = [];
  for (const entry of entries) {
    const match = BUILD_DIR.exec(entry);
    if (!match) continue;
    const pid = match[1] === undefined ? undefined : Number(match[1]);
    if (scope.pids && (pid === undefined || !scope.pids.includes(pid))) continue;
    const path = join(root, entry);
    const info = await lstat(path).catch(() => undefined);
    if (!info?.isDirectory() || (uid !== undefined && info.uid !== uid)) continue;
    const gone = pid === undefined ? now - info.mtimeMs > UNOWNED_DIR_STALE_MS : !processAlive(pid);
    if (gone) stale.push(path);
  }
  return stale;
}

/** Lists what failed or killed builds left (see BuildLeftovers); `scope` narrows it. */
export async function findBuildLeftovers(scope: BuildLeftoverScope = {}): Promise<BuildLeftovers> {
  const [images, containers, directories] = await Promise.all([
    danglingImages(scope),
    stoppedBuildContainers(scope),
    scope.repo || scope.dephash ? Promise.resolve([]) : staleBuildDirectories(scope),
  ]);
  return { images, containers, directories };
}

export interface BuildLeftoverRemoval {
  /** `<kind>:<name>` entries, as teardown reports them. */
  removed: string[];
  failures: { kind: 'image' | 'container' | 'directory'; name: string; exitCode: number; message: string }[];
}

/**
 * Removes listed leftovers: containers first (they hold their image), then images without
 * `--force` (an image a running build still uses, or with children, stays), then directories.
 */
export async function removeBuildLeftovers(found: BuildLeftovers): Promise<BuildLeftoverRemoval> {
  const result: BuildLeftoverRemoval = { removed: [], failures: [] };
  const each = async (kind: 'container' | 'image', names: string[], argv: (name: string) => string[]) => {
    for (const name of names) {
      const done = await docker(argv(name), { allowFailure: true });
      if (done.exitCode === 0 || /no such (image|container)/i.test(done.stderr))
        result.removed.push(`${kind}:${name}`);
      else result.failures.push({ kind, name, exitCode: done.exitCode, message: done.stderr.trim() });
    }
  };
  await each('container', found.containers, (name) => ['container', 'rm', '--', name]);
  await each('image', found.images, (id) => ['image', 'rm', '--', id]);
  for (const dir of found.directories) {
    try {
      await rm(dir, { recursive: true, force: true });
      result.removed.push(`directory:${dir}`);
    } catch (error) {
      result.failures.push({ kind: 'directory', name: dir, exitCode: -1, message: (error as Error).message });
    }
  }
  return result;
}
