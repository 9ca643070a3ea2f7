import { lstat, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  BOX_USER,
  BUILD_LABEL,
  BUILD_LABEL_DEPHASH,
  BUILD_LABEL_REPO,
  DEPS_SRC,
  DockerCommandError,
  engine,
  INSTALL_PID1,
  mayBeBuildStep,
  REPO_DIR,
} from '@ca-sandbox/docker';
import { LABEL_BUILD_ID } from './dockerfile.js';

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
  /** Stopped build containers (names): those of our RUN steps and our install containers. */
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

/** The build labels a scope selects: every build object carries the first. */
function scopeLabels(scope: BuildLeftoverScope): string[] {
  return [
    `${BUILD_LABEL}=1`,
    ...(scope.repo ? [`${BUILD_LABEL_REPO}=${scope.repo}`] : []),
    ...(scope.dephash ? [`${BUILD_LABEL_DEPHASH}=${scope.dephash}`] : []),
  ];
}

const DANGLING = { dangling: ['true'] };

/**
 * Dangling images of ours: labeled by our Dockerfile's first instruction, or (unscoped only, for
 * builds older than that label) whose history holds our first RUN. Untagged images whose labels
 * and history say nothing of us are never listed.
 */
async function danglingImages(scope: BuildLeftoverScope): Promise<string[]> {
  const ids = async (labels: string[]) =>
    (await engine.image.list({ labels, filters: DANGLING })).map((image) => image.id);
  const labeled = await ids(scopeLabels(scope));
  if (scope.repo || scope.dephash) return labeled;
  const unlabeled = (await ids([])).filter((id) => !labeled.includes(id));
  const byHistory: string[] = [];
  for (const id of unlabeled) {
    // Gone meanwhile, or no answer: not provably ours.
    const history = await engine.image.history(id).catch(() => [] as string[]);
    if (history.some((createdBy) => createdBy.includes(OWN_HISTORY_MARK))) byHistory.push(id);
  }
  return [...labeled, ...byHistory];
}

/** True for the Cmd of one of our RUN steps (the root set-up, or a no-new-privs RUN: the Claude Code image's, an older deps build's). */
export function isOwnBuildCommand(cmd: unknown): boolean {
  if (!Array.isArray(cmd) || !cmd.every((word) => typeof word === 'string')) return false;
  const words = cmd as string[];
  if (words[0] === '/usr/bin/setpriv' && words[1] === '--no-new-privs') return true;
  return words[0] === '/bin/sh' && words[1] === '-c' && (words[2] ?? '').startsWith(OWN_HISTORY_MARK);
}

/** True for an install container of ours (run-install.ts): its name by the build id, INSTALL_PID1 as its command. */
export function isOwnInstallContainer(name: string, cmd: unknown): boolean {
  return (
    /^\/?ca-sbx_install-[0-9a-f]{8,64}$/.test(name) &&
    Array.isArray(cmd) &&
    cmd.length === INSTALL_PID1.length &&
    cmd.every((word, at) => word === INSTALL_PID1[at])
  );
}

/** Stopped containers of our builds: build label, no sandbox's but a build's role, one of our commands. */
async function stoppedBuildContainers(
  scope: BuildLeftoverScope,
): Promise<{ name: string; labels: Record<string, string> }[]> {
  const stopped = await engine.container.list({
    all: true,
    labels: scopeLabels(scope),
    filters: { status: ['created', 'exited', 'dead'] },
  });
  // Inspected one by one: one that is gone meanwhile is simply not listed.
  const inspected = await Promise.all(
    stopped.map((item) => engine.container.find(item.id).catch(() => undefined)),
  );
  return inspected.flatMap((doc) => {
    const ours =
      doc !== undefined &&
      !doc.State.Running &&
      // A sandbox's install container (role build) too: it holds the build's images, and a stopped
      // one of a build that no longer runs is nothing but a leftover (its create ended or died).
      // The sandbox's sweep takes it as well; its other objects stay for that sweep.
      mayBeBuildStep(doc.Config.Labels) &&
      doc.Config.Labels[BUILD_LABEL] === '1' &&
      (isOwnBuildCommand(doc.Config.Cmd) || isOwnInstallContainer(doc.Name, doc.Config.Cmd));
    return ours ? [{ name: doc.Name.replace(/^\//, ''), labels: doc.Config.Labels }] : [];
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

/**
 * What identifies the objects of one running build, read from the LABEL line its Dockerfile starts
 * with (every step image and step container carries those labels): its build id, else (builds
 * older than the id) its repo and dephash.
 */
export type LiveBuild = { buildId: string } | { repo: string; dephash: string };

const DOCKERFILE_LABELS = /^LABEL (.*)$/m;

/** The LiveBuild of a rendered Dockerfile; undefined when its first LABEL line names neither. */
export function liveBuildOf(dockerfile: string): LiveBuild | undefined {
  const line = DOCKERFILE_LABELS.exec(dockerfile)?.[1] ?? '';
  const labels = new Map(
    line.split(' ').map((pair) => {
      const at = pair.indexOf('=');
      return [pair.slice(0, at), pair.slice(at + 1)] as const;
    }),
  );
  const buildId = labels.get(LABEL_BUILD_ID);
  if (buildId) return { buildId };
  const repo = labels.get(BUILD_LABEL_REPO);
  const dephash = labels.get(BUILD_LABEL_DEPHASH);
  return repo && dephash ? { repo, dephash } : undefined;
}

/**
 * The builds still running: context directories in `root` (any owner) named with a pid that
 * lives, by their Dockerfile. One that has no Dockerfile yet has not started `docker build` (it
 * has no object to keep). `undefined` when a live one cannot be read or named (another user's,
 * a version without our labels): then no build object can be told from a live build's.
 */
export async function liveBuilds(root = tmpdir()): Promise<LiveBuild[] | undefined> {
  const entries = await readdir(root).catch(() => [] as string[]);
  const builds: LiveBuild[] = [];
  for (const entry of entries) {
    const pid = BUILD_DIR.exec(entry)?.[1];
    if (pid === undefined || !processAlive(Number(pid))) continue;
    let text: string;
    try {
      text = await readFile(join(root, entry, 'Dockerfile'), 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
      return undefined;
    }
    const build = liveBuildOf(text);
    if (!build) return undefined;
    builds.push(build);
  }
  return builds;
}

function isOfBuild(labels: Record<string, string>, build: LiveBuild): boolean {
  if ('buildId' in build) return labels[LABEL_BUILD_ID] === build.buildId;
  return labels[BUILD_LABEL_REPO] === build.repo && labels[BUILD_LABEL_DEPHASH] === build.dephash;
}

function liveLabels(build: LiveBuild): string[] {
  if ('buildId' in build) return [`${LABEL_BUILD_ID}=${build.buildId}`];
  return [`${BUILD_LABEL_REPO}=${build.repo}`, `${BUILD_LABEL_DEPHASH}=${build.dephash}`];
}

/**
 * Lists what failed or killed builds left (see BuildLeftovers); `scope` narrows it. Steps and
 * step containers of a build that still runs (liveBuilds: by their build id) are not
 * leftovers: removing them would break it.
 */
export async function findBuildLeftovers(scope: BuildLeftoverScope = {}): Promise<BuildLeftovers> {
  const [images, containers, directories] = await Promise.all([
    danglingImages(scope),
    stoppedBuildContainers(scope),
    scope.repo || scope.dephash ? Promise.resolve([]) : staleBuildDirectories(scope),
  ]);
  // The live builds after the listing: every object listed belongs to a build that had written
  // its Dockerfile by then, so a build still running is found here.
  const live = await liveBuilds();
  if (live === undefined) return { images: [], containers: [], directories };
  // Every image of a live build, listed after the dangling ones: a step that got a child since is
  // still in this list (a build keeps its step images until it ends), so no race lets one through.
  const busy = new Set<string>();
  for (const running of live) {
    for (const image of await engine.image.list({ all: true, labels: liveLabels(running) }))
      busy.add(image.id);
  }
  return {
    images: images.filter((id) => !busy.has(id)),
    containers: containers
      .filter((container) => !live.some((build) => isOfBuild(container.labels, build)))
      .map((container) => container.name),
    directories,
  };
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
  const each = async (
    kind: 'container' | 'image',
    names: string[],
    remove: (name: string) => Promise<boolean>,
  ) => {
    for (const name of names) {
      try {
        // false: already gone, which is what was asked.
        await remove(name);
        result.removed.push(`${kind}:${name}`);
      } catch (error) {
        const exitCode = error instanceof DockerCommandError ? error.exitCode : -1;
        const message = error instanceof DockerCommandError ? error.stderr.trim() : (error as Error).message;
        result.failures.push({ kind, name, exitCode, message });
      }
    }
  };
  await each('container', found.containers, (name) => engine.container.remove(name));
  // Without force: an image a running build still uses, or with children, stays.
  await each('image', found.images, (id) => engine.image.remove(id));
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
