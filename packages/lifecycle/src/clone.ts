import { BOX_USER, engine, REPO_DIR, SH_BIN } from '@ca-sandbox/docker';
import { sanitizeName } from '@ca-sandbox/docker/contracts';
import { CloneFailedError } from './errors.js';
import { type DirectoryScan, packDirectory } from './pack-local.js';
import { type CloneScheme, type ParsedSource, redactUserinfo, urlWithoutUserinfo } from './source.js';

/** Where a local repo is unpacked in the helper before `git clone --no-local` (a tmpfs). */
export const LOCAL_STAGING = '/tmp/src';

/**
 * The environment of every git in the helper: no system or global config, no prompts, no LFS
 * smudge, ssh that never asks.
 */
export const GIT_ENV: Record<string, string> = {
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_TERMINAL_PROMPT: '0',
  GIT_LFS_SKIP_SMUDGE: '1',
  GIT_ASKPASS: '/bin/false',
  SSH_ASKPASS: '/bin/false',
  GIT_SSH_COMMAND:
    'ssh -o BatchMode=yes -o StrictHostKeyChecking=accept-new -o UserKnownHostsFile=/tmp/.known_hosts',
};

/** Programs of the helper image, by path: nothing on a PATH chooses what we run. */
const TIMEOUT_BIN = '/usr/bin/timeout';
const GIT_BIN = '/usr/bin/git';
const RM_BIN = '/bin/rm';
const TAR_BIN = '/bin/tar';

/** `-c` settings for every git in the helper: only the named protocol, no hooks, no bundles. */
export function gitHardening(protocol: CloneScheme | 'file'): string[] {
  return [
    ['protocol.allow', 'never'],
    [`protocol.${protocol}.allow`, 'always'],
    ['core.hooksPath', '/dev/null'],
    ['core.fsmonitor', 'false'],
    ['transfer.bundleURI', 'false'],
    ['submodule.recurse', 'false'],
    ['credential.helper', ''],
    ['core.symlinks', 'true'],
  ].flatMap(([key, value]) => ['-c', `${key}=${value}`]);
}

export interface CloneStep {
  argv: string[];
  /** A failure of this step is tolerated (the next step is the fallback). */
  optional?: boolean;
  /** Only run when the previous optional step failed. */
  fallback?: boolean;
}

/**
 * A clone in three parts: `fetch` brings the objects into /work/repo/.git and writes no work tree,
 * then the caller measures the tree of `revision` against the source caps (a checkout bomb is a
 * few KB of objects that expand to GiB), and only then `checkout` writes the files.
 */
export interface ClonePlan {
  fetch: CloneStep[];
  /** What `checkout` will write: `HEAD` or the commit sha. */
  revision: string;
  checkout: CloneStep[];
}

/**
 * The plan run in the helper (as 1000:1000, `--` before every URL and directory) for a URL clone:
 * a shallow single-branch clone without checkout, or, for a commit sha, a fetch of that commit
 * (with a full fetch as fallback when the server refuses arbitrary wants).
 */
export function buildUrlClonePlan(
  source: { url: string; scheme: CloneScheme },
  ref: { ref: string; commit: boolean } | undefined,
  timeoutSeconds: number,
): ClonePlan {
  const git = gitCommand(source.scheme, timeoutSeconds);
  const inRepo = [...git, '-C', REPO_DIR];
  return {
    fetch: fetchSteps(source, ref, git, inRepo),
    revision: ref?.commit ? ref.ref : 'HEAD',
    checkout: [checkoutStep(inRepo, ref), ...forgetCredentials(source, inRepo)],
  };
}

/** `timeout -s KILL <s> git -c ...`: every git in the helper is hardened and bounded in time. */
export function gitCommand(protocol: CloneScheme | 'file', timeoutSeconds: number): string[] {
  return [TIMEOUT_BIN, '-s', 'KILL', String(timeoutSeconds), GIT_BIN, ...gitHardening(protocol)];
}

/** The checkout of the measured revision: the cloned branch, or the commit detached. */
function checkoutStep(inRepo: string[], ref: { ref: string; commit: boolean } | undefined): CloneStep {
  const target = ref?.commit ? ['--detach', ref.ref] : [];
  return { argv: [...inRepo, 'checkout', '--quiet', ...target, '--'] };
}

/**
 * A URL with credentials (`https://token@host/...`) must not stay in /work/repo/.git/config, where
 * the code in the box could read it: origin is reset to the URL without userinfo, and FETCH_HEAD
 * (which names the fetched URL) is dropped.
 */
export function forgetCredentials(
  source: { url: string; scheme: CloneScheme },
  inRepo: string[],
): CloneStep[] {
  const clean = urlWithoutUserinfo(source);
  if (clean === source.url) return [];
  return [
    { argv: [...inRepo, 'remote', 'set-url', 'origin', clean] },
    { argv: [RM_BIN, '-f', '--', `${REPO_DIR}/.git/FETCH_HEAD`] },
  ];
}

function fetchSteps(
  source: { url: string; scheme: CloneScheme },
  ref: { ref: string; commit: boolean } | undefined,
  git: string[],
  inRepo: string[],
): CloneStep[] {
  if (!ref?.commit) {
    const branch = ref ? ['--branch', ref.ref] : [];
    return [
      {
        argv: [
          ...git,
          'clone',
          '--no-checkout',
          '--no-recurse-submodules',
          '--depth',
          '1',
          '--single-branch',
          ...branch,
          '--',
          source.url,
          REPO_DIR,
        ],
      },
    ];
  }
  return [
    { argv: [...git, 'init', '--quiet', '--', REPO_DIR] },
    { argv: [...inRepo, 'remote', 'add', 'origin', '--', source.url] },
    {
      argv: [
        ...inRepo,
        'fetch',
        '--quiet',
        '--no-recurse-submodules',
        '--depth',
        '1',
        '--',
        'origin',
        ref.ref,
      ],
      optional: true,
    },
    {
      argv: [
        ...inRepo,
        'fetch',
        '--quiet',
        '--no-recurse-submodules',
        '--',
        'origin',
        '+refs/*:refs/remotes/origin/*',
      ],
      fallback: true,
    },
  ];
}

/**
 * `git clone --no-local --no-checkout` of the unpacked local repo, then (after the measure) the
 * checkout, and the (meaningless in the box) origin dropped.
 */
export function buildLocalClonePlan(
  ref: { ref: string; commit: boolean } | undefined,
  timeoutSeconds: number,
): ClonePlan {
  const git = gitCommand('file', timeoutSeconds);
  const inRepo = [...git, '-C', REPO_DIR];
  const branch = ref && !ref.commit ? ['--branch', ref.ref] : [];
  return {
    fetch: [
      {
        argv: [
          ...git,
          'clone',
          '--quiet',
          '--no-checkout',
          '--no-local',
          '--no-recurse-submodules',
          ...branch,
          '--',
          LOCAL_STAGING,
          REPO_DIR,
        ],
      },
    ],
    revision: ref?.commit ? ref.ref : 'HEAD',
    checkout: [checkoutStep(inRepo, ref), { argv: [...inRepo, 'remote', 'remove', 'origin'] }],
  };
}

/** Runs clone steps in the helper; CloneFailedError with git's own first error line. */
export async function runCloneSteps(
  helper: string,
  steps: readonly CloneStep[],
  timeoutSeconds: number,
  signal?: AbortSignal,
  extraEnv: Record<string, string> = {},
): Promise<void> {
  let previousFailed = false;
  for (const step of steps) {
    if (step.fallback && !previousFailed) continue;
    const result = await engine.exec.internal(helper, step.argv, {
      user: BOX_USER,
      workdir: '/tmp',
      env: { ...GIT_ENV, ...extraEnv },
      timeoutMs: (timeoutSeconds + 30) * 1000,
      ...(signal ? { signal } : {}),
    });
    previousFailed = result.exitCode !== 0;
    if (previousFailed && !step.optional) throw cloneError(step, result.exitCode, result.stderr);
  }
}

/** Where the clone's CA bundle lives in the helper (its tmpfs): never in the box or an image. */
export const CLONE_CA_PATH = '/tmp/ca-sbx-ca.pem';

/**
 * Behind a TLS-intercepting proxy the clone must trust the same CA bundle as the install: the
 * helper gets the system bundle plus the given certificates at CLONE_CA_PATH (on its tmpfs, gone
 * with the helper), and the environment that points git's http.sslCAInfo at it.
 */
export async function installCloneCa(helper: string, certificates: Buffer): Promise<Record<string, string>> {
  const script = `umask 022; { cat /etc/ssl/certs/ca-certificates.crt 2>/dev/null; cat; } > ${CLONE_CA_PATH}`;
  const installed = await engine.exec.internal(helper, [SH_BIN, '-c', script], {
    user: BOX_USER,
    input: certificates,
    timeoutMs: 30_000,
  });
  if (installed.exitCode !== 0) {
    throw new CloneFailedError(
      `installing the CA bundle in the helper failed: ${firstLine(installed.stderr)}`,
    );
  }
  return { GIT_SSL_CAINFO: CLONE_CA_PATH };
}

/**
 * Streams the packed local directory into the helper (`docker exec -i ... tar -x`): a git repo
 * goes to the staging dir to be cloned, a plain tree straight into /work/repo.
 */
export async function sendLocalTree(
  helper: string,
  scan: DirectoryScan,
  signal?: AbortSignal,
): Promise<void> {
  const prefix = scan.gitRepo ? 'src/' : '';
  const target = scan.gitRepo ? '/tmp' : REPO_DIR;
  const unpacked = await engine.exec.internal(
    helper,
    [TAR_BIN, '-x', '--no-same-owner', '-C', target, '-f', '-'],
    {
      user: BOX_USER,
      input: packDirectory(scan, prefix),
      timeoutMs: 30 * 60_000,
      ...(signal ? { signal } : {}),
    },
  );
  if (unpacked.exitCode !== 0) {
    throw new CloneFailedError(
      `copying the local directory into the helper failed: ${firstLine(unpacked.stderr)}`,
    );
  }
}

function cloneError(step: CloneStep, exitCode: number, stderr: string): CloneFailedError {
  const verb =
    step.argv.find((arg) => ['clone', 'fetch', 'checkout', 'init', 'remote'].includes(arg)) ?? 'git';
  const why = exitCode === 137 ? 'the time limit was reached' : firstLine(stderr) || `exit code ${exitCode}`;
  return new CloneFailedError(`git ${verb} failed in the helper: ${why}`);
}

export function firstLine(text: string): string {
  const lines = text
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
  const fatal = lines.find((line) => /^(fatal|error):/i.test(line)) ?? lines[0] ?? '';
  // git's own message may quote the URL, credentials and all: masked before it is cut short.
  return sanitizeName(redactUserinfo(fatal), 300);
}

export type { ParsedSource };
