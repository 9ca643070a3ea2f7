import { SH_BIN } from '@ca-sandbox/docker';
import { sanitizeName } from '@ca-sandbox/docker/contracts';
import { REPO_DIR } from '@ca-sandbox/docker/process';
import { type CloneStep, firstLine, gitCommand } from './clone-plan.js';
import { CheckoutTooLargeError, CloneFailedError } from './errors.js';
import type { PackLimits } from './pack-local.js';

/**
 * Written to `.git/info/attributes` (which wins over every `.gitattributes` in the tree) before
 * the checkout: no eol, encoding, ident or filter conversion, so each file is written with exactly
 * the size `git ls-tree -l` reports (`eol=crlf` could double a file, `working-tree-encoding`
 * quadruple it), and the measure below is the bound of what the checkout writes.
 */
export const CHECKOUT_ATTRIBUTES = '* -text -eol -ident -filter -working-tree-encoding';

/** Submodules the measure names (it counts them all). */
const SUBMODULES_NAMED = 3;
/**
 * Characters of a named submodule's path the measure prints: git sets no bound on a path (nested
 * trees of long names, each byte quoted as four), and the exec's stdout is read whole.
 */
const SUBMODULE_PATH_MAX = 300;

/**
 * Runs in the helper at /work/repo. `$1` entries cap, `$2` bytes cap, `$3` revision, then the
 * hardened git command. awk adds up `git ls-tree -r -t -l` (trees, blobs, symlinks, gitlinks: one
 * entry each; blob sizes as bytes) and stops at the first cap crossed, so a tree of billions of
 * entries costs no more than the cap (git then dies of SIGPIPE). The last line says the verdict.
 */
const MEASURE_SCRIPT = `e=$1 b=$2 rev=$3
shift 3
mkdir -p .git/info && printf '%s\\n' '${CHECKOUT_ATTRIBUTES}' > .git/info/attributes || exit 3
"$@" rev-parse --quiet --verify "$rev^{tree}" >/dev/null || { echo missing; exit 0; }
{ "$@" ls-tree -r -t -l "$rev"; echo "END $?"; } | awk -v e="$e" -v b="$b" '
$1 == "END" { if ($2 != 0) { print "failed", $2; exit 0 } printf "ok %d %.0f %d\\n", n, s, g; exit 0 }
{ n++; if ($4 != "-") s += $4
  if ($2 == "commit") { g++; if (g <= ${SUBMODULES_NAMED}) print "submodule", substr($0, index($0, "\\t") + 1, ${SUBMODULE_PATH_MAX}) }
  if (n > e + 0) { printf "entries %d %.0f\\n", n, s; exit 0 }
  if (s > b + 0) { printf "bytes %d %.0f\\n", n, s; exit 0 } }'
`;

export interface CheckoutSize {
  /** Files, directories, symlinks and submodule placeholders the checkout creates. */
  entries: number;
  /** Bytes of file content it writes. */
  bytes: number;
  /** `HEAD` of an empty repository: there is nothing to check out. */
  empty: boolean;
  /**
   * Gitlinks in the tree: the clone never fetches a submodule, so each is an empty folder in the
   * box. `named`: the first few paths, as git prints them (the repo's: shown sanitised).
   */
  submodules: { count: number; named: string[] };
}

/** The argv of the measure (`/bin/sh -c` with its caps, revision and hardened git). */
export function measureCommand(revision: string, limits: PackLimits, timeoutSeconds: number): string[] {
  return [
    SH_BIN,
    '-c',
    MEASURE_SCRIPT,
    'ca-sbx-measure',
    String(limits.maxEntries),
    String(limits.maxBytes),
    revision,
    ...gitCommand('file', timeoutSeconds),
  ];
}

/** The measure as a clone step: run at /work/repo right after the fetch, in the same exec. */
export function measureStep(revision: string, limits: PackLimits, timeoutSeconds: number): CloneStep {
  return {
    argv: measureCommand(revision, limits, timeoutSeconds),
    cwd: REPO_DIR,
    optional: true,
    result: true,
  };
}

/** Reads the measure's last line; throws for a cap crossed or a git failure. */
export function checkoutVerdict(
  stdout: string,
  exitCode: number,
  stderr: string,
  revision: string,
  limits: PackLimits,
): CheckoutSize {
  const lines = stdout.trim().split('\n');
  const last = lines.at(-1)?.trim() ?? '';
  const [verdict = '', first = '', second = '', third = '0'] = last.split(/\s+/);
  const entries = Number(first);
  const bytes = Number(second);
  const none = { count: 0, named: [] };
  if (exitCode === 0 && verdict === 'missing') {
    if (revision === 'HEAD') return { entries: 0, bytes: 0, empty: true, submodules: none };
    throw new CloneFailedError(
      `git checkout failed in the helper: ${revision} is not in the fetched history`,
    );
  }
  if (exitCode === 0 && verdict === 'entries')
    throw new CheckoutTooLargeError('entries', limits, { entries, bytes });
  if (exitCode === 0 && verdict === 'bytes')
    throw new CheckoutTooLargeError('bytes', limits, { entries, bytes });
  if (exitCode === 0 && verdict === 'ok' && Number.isSafeInteger(entries) && Number.isFinite(bytes)) {
    const count = Number(third);
    const named = lines
      .slice(0, -1)
      .filter((line) => line.startsWith('submodule '))
      .slice(0, SUBMODULES_NAMED)
      .map((line) => sanitizeName(line.slice('submodule '.length), 120));
    return {
      entries,
      bytes,
      empty: false,
      submodules: Number.isSafeInteger(count) && count > 0 ? { count, named } : none,
    };
  }
  const code = verdict === 'failed' ? Number(first) : exitCode;
  const why = code === 137 ? 'the time limit was reached' : firstLine(stderr) || `exit code ${code}`;
  throw new CloneFailedError(`measuring the checkout failed in the helper: ${why}`);
}
