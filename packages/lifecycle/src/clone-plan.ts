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

/**
 * `-c` settings for every git in the helper: only the named protocol, no hooks, no bundles, and no
 * automatic maintenance (a detached `git maintenance`/`gc --auto` would write `.git` in the volume
 * after the checkout is written, while a box's repo view may have it mounted as its upper).
 */
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
    ['maintenance.auto', 'false'],
    ['gc.auto', '0'],
  ].flatMap(([key, value]) => ['-c', `${key}=${value}`]);
}

export interface CloneStep {
  argv: string[];
  /** A failure of this step is tolerated (the next step is the fallback). */
  optional?: boolean;
  /** Only run when the previous optional step failed. */
  fallback?: boolean;
  /** Reads the exec's stdin (the local tree's tar); every other step reads /dev/null. */
  input?: boolean;
  /** Runs in this directory (default /tmp). */
  cwd?: string;
  /** Its stdout is the batch's result (the checkout measure's verdict); other steps' goes nowhere. */
  result?: boolean;
  /**
   * Runs only when the last result step's verdict (the first word of its last line) is one of
   * these: the checkout goes in the same exec as the measure, and only after a measure within the
   * caps. A step skipped this way is no failure; one that runs and fails ends the batch.
   */
  whenVerdict?: readonly CheckoutVerdictWord[];
}

/** The measure's verdicts (checkout-size.ts) a step can wait for. */
export type CheckoutVerdictWord = 'ok' | 'missing';

/** After the measure: the work tree is written only when the tree is within the caps. */
const WRITE_TREE: readonly CheckoutVerdictWord[] = ['ok'];
/** The repo's config (origin, credentials) is set after any measure that allows going on, empty repo included. */
const AFTER_MEASURE: readonly CheckoutVerdictWord[] = ['ok', 'missing'];

/**
 * A clone in three parts: `fetch` brings the objects into /work/repo/.git and writes no work tree,
 * then the caller measures the tree of `revision` against the source caps (a checkout bomb is a
 * few KB of objects that expand to GiB), and only then `checkout` writes the files: all in one
 * exec, each checkout step gated on the measure's verdict (`whenVerdict`).
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
  return { argv: [...inRepo, 'checkout', '--quiet', ...target, '--'], whenVerdict: WRITE_TREE };
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
    { argv: [...inRepo, 'remote', 'set-url', 'origin', clean], whenVerdict: AFTER_MEASURE },
    { argv: [RM_BIN, '-f', '--', `${REPO_DIR}/.git/FETCH_HEAD`], whenVerdict: AFTER_MEASURE },
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
 * checkout, and origin set to the repo's own `origin` (when it is a network remote) or dropped.
 */
export function buildLocalClonePlan(
  ref: { ref: string; commit: boolean } | undefined,
  timeoutSeconds: number,
  origin?: string,
  shallow = false,
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
          // One commit over the pack protocol (a file:// URL: --depth means nothing to a path).
          ...(shallow ? ['--depth', '1'] : []),
          ...branch,
          '--',
          shallow ? `file://${LOCAL_STAGING}` : LOCAL_STAGING,
          REPO_DIR,
        ],
      },
    ],
    revision: ref?.commit ? ref.ref : 'HEAD',
    // The staging copy's path means nothing in the box: origin becomes the repo's own (a network
    // remote without credentials, see local-origin.ts), or goes.
    checkout: [
      checkoutStep(inRepo, ref),
      {
        argv: origin
          ? [...inRepo, 'remote', 'set-url', 'origin', origin]
          : [...inRepo, 'remote', 'remove', 'origin'],
        whenVerdict: AFTER_MEASURE,
      },
    ],
  };
}

/** How a batch of clone steps ended: the result step's stdout and exit code (the measure's). */
export interface StepsOutcome {
  stdout: string;
  exitCode: number;
  stderr: string;
}

const quote = (arg: string) => `'${arg.replaceAll("'", "'\\''")}'`;
/** The batch's last stdout line: `ca-sbx-steps <code of the last step run>` or `… failed <i> <code>`. */
const STEPS_MARK = 'ca-sbx-steps';
/**
 * The end of a failed step's stderr that comes back to the host (git's fatal line is its last). A
 * hostile server sends `remote:` lines without end, a hostile local repo an error per alternates
 * line: the whole stderr (up to the helper's 1 GiB tmpfs) would be held in the CLI's memory.
 */
export const STEP_STDERR_TAIL_BYTES = 64 * 1024;

/**
 * The shell script that runs `steps` one after another in one exec, with the loop of the old
 * one-exec-per-step runner: a fallback runs only after its optional step failed, a failed step
 * that is not optional ends the batch. Each argv is single-quoted, never interpolated; the end of
 * the last failed step's stderr (STEP_STDERR_TAIL_BYTES) is what the batch prints on stderr (git's
 * own error line).
 */
export function stepsScript(steps: readonly CloneStep[]): string {
  const lines = ['pf=0 c=0 v=', ': > /tmp/.ca-sbx-step.fail'];
  const keepTail = `tail -c ${STEP_STDERR_TAIL_BYTES} /tmp/.ca-sbx-step.err > /tmp/.ca-sbx-step.fail`;
  const failed = (index: number, code: string) =>
    `cat /tmp/.ca-sbx-step.fail >&2; printf '\\n${STEPS_MARK} failed ${index} %d\\n' "${code}"; exit 0`;
  steps.forEach((step, index) => {
    const stdin = step.input ? '' : ' </dev/null';
    // A result step's stdout is kept in a file, then passed on: its last line is the verdict.
    const stdout = step.result ? ' >/tmp/.ca-sbx-step.out' : ' >/dev/null';
    const cwd = quote(step.cwd ?? '/tmp');
    const run = `(cd ${cwd} && exec ${step.argv.map(quote).join(' ')})${stdin}${stdout} 2>/tmp/.ca-sbx-step.err`;
    if (step.whenVerdict) {
      // Never optional; on success the batch's code stays the result step's (the measure's).
      // The gate is the host's rule (checkoutVerdict): the word counts only from a measure that
      // exited 0, so no disagreement between the two can write a file the host then refuses.
      lines.push(
        `case "$c:$v" in ${step.whenVerdict.map((word) => quote(`0:${word}`)).join('|')})`,
        run,
        `g=$?; if [ "$g" != 0 ]; then ${keepTail}; ${failed(index, '$g')}; fi`,
        ';;',
        'esac',
      );
      return;
    }
    const body = [
      run,
      'c=$?; pf=0',
      ...(step.result
        ? ['cat /tmp/.ca-sbx-step.out', "v=$(tail -n 1 /tmp/.ca-sbx-step.out | cut -d ' ' -f 1)"]
        : []),
      `if [ "$c" != 0 ]; then pf=1; ${keepTail}; fi`,
      ...(step.optional ? [] : [`if [ "$c" != 0 ]; then ${failed(index, '$c')}; fi`]),
    ];
    if (step.fallback) lines.push('if [ "$pf" = 1 ]; then', ...body, 'fi');
    else lines.push(...body);
  });
  lines.push('cat /tmp/.ca-sbx-step.fail >&2', `printf '\\n${STEPS_MARK} %d\\n' "$c"`);
  return lines.join('\n');
}

/**
 * Runs clone steps in the helper, all in ONE exec (each exec costs the engine about 100 ms: a
 * local clone was five); CloneFailedError with git's own first error line for the step that
 * failed. `input` feeds the step marked `input`.
 */
export async function runCloneSteps(
  helper: string,
  steps: readonly CloneStep[],
  timeoutSeconds: number,
  signal?: AbortSignal,
  extraEnv: Record<string, string> = {},
  input?: NodeJS.ReadableStream | Buffer,
): Promise<StepsOutcome> {
  const result = await engine.exec.internal(helper, [SH_BIN, '-c', stepsScript(steps), 'ca-sbx-steps'], {
    user: BOX_USER,
    workdir: '/tmp',
    env: { ...GIT_ENV, ...extraEnv },
    timeoutMs: steps.length * (timeoutSeconds + 30) * 1000,
    ...(input !== undefined ? { input: input as Buffer } : {}),
    ...(signal ? { signal } : {}),
  });
  const lines = result.stdout.split('\n');
  while (lines.length > 0 && lines.at(-1)?.trim() === '') lines.pop();
  const mark = (lines.pop() ?? '').trim().split(' ');
  if (mark[0] !== STEPS_MARK || result.exitCode !== 0) {
    // Killed (the time limit or an abort) or the shell itself failed: no verdict.
    const why =
      result.exitCode === 137
        ? 'the time limit was reached'
        : firstLine(result.stderr) || `exit code ${result.exitCode}`;
    throw new CloneFailedError(`git failed in the helper: ${why}`);
  }
  if (mark[1] === 'failed') {
    const step = steps[Number(mark[2])] ?? { argv: [] };
    throw cloneError(step, Number(mark[3]), result.stderr);
  }
  return { stdout: lines.join('\n'), exitCode: Number(mark[1]), stderr: result.stderr };
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
 * The step that unpacks the packed local directory (the exec's stdin) in the helper: a git repo
 * goes to the staging dir to be cloned, a plain tree straight into /work/repo.
 */
export function unpackStep(scan: DirectoryScan): CloneStep {
  const target = scan.gitRepo ? '/tmp' : REPO_DIR;
  return { argv: [TAR_BIN, '-x', '--no-same-owner', '-C', target, '-f', '-'], input: true };
}

/** The tar of the local directory that unpackStep reads. */
export function localTreeInput(scan: DirectoryScan): NodeJS.ReadableStream {
  return packDirectory(scan, scan.gitRepo ? 'src/' : '');
}

function cloneError(step: CloneStep, exitCode: number, stderr: string): CloneFailedError {
  if (step.input) {
    return new CloneFailedError(
      `copying the local directory into the helper failed: ${firstLine(stderr) || `exit code ${exitCode}`}`,
    );
  }
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
