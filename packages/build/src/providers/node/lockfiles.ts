import { createHash } from 'node:crypto';
import type { ManifestFile } from '../../manifests.js';

/**
 * A root lockfile the install rewrote (the repo's did not match its manifests): the box has the
 * repo's copy, so its package manager may want to install again, and create says so. The install
 * step prints the sha256 of each installed root lockfile (LOCKFILE_MARKER); the host compares it
 * with the repo's bytes it built from and keeps the names that differ as a label of the deps
 * image, so a cache hit knows it without running anything in the box.
 */

/** The root lockfiles compared with the installed ones. */
export const CHECKED_LOCKFILES = [
  'yarn.lock',
  'package-lock.json',
  'npm-shrinkwrap.json',
  'pnpm-lock.yaml',
] as const;
export type CheckedLockfile = (typeof CHECKED_LOCKFILES)[number];

/** Printed by the install's last step: `<marker><name> <sha256 hex>` per installed root lockfile. */
export const LOCKFILE_MARKER = 'ca-sandbox-installed-lockfile: ';

/** Label of a deps image: the root lockfiles its install rewrote, comma-joined ('' none; absent: not recorded). */
export const LABEL_CHANGED_LOCKS = 'ca.sandbox.cache.changed-locks';

/** Largest lockfile compared (the link's comparison in the box reads no more either). */
export const MAX_COMPARED_LOCKFILE = 64 * 1024 * 1024;

/** Node source for the install's last step (SRC and crypto defined by the caller's script). */
export const LOCKFILE_HASHES_JS = `
for (const name of ${JSON.stringify(CHECKED_LOCKFILES)}) {
  const file = SRC + '/' + name;
  let stat;
  try { stat = fs.lstatSync(file); } catch { continue; }
  if (!stat.isFile() || stat.size > ${MAX_COMPARED_LOCKFILE}) continue;
  console.log(${JSON.stringify(LOCKFILE_MARKER)} + name + ' ' + crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex'));
}
`;

const MARKED = new RegExp(
  `^${LOCKFILE_MARKER}(${CHECKED_LOCKFILES.map((name) => name.replace(/\./g, '\\.')).join('|')}) ([0-9a-f]{64})$`,
);

/**
 * The repo's root lockfiles (of `files`, the manifests the image was built from) that the install
 * left with other bytes, by the marker lines of the build's output (the last line per name wins:
 * ours are printed after the install). The repo's install code can print such a line too: the
 * worst it gains is a notice that is not true, or one missed.
 */
export function changedLocksFromOutput(
  lines: readonly string[],
  files: readonly ManifestFile[],
): CheckedLockfile[] {
  const installed = new Map<string, string>();
  for (const line of lines) {
    const match = MARKED.exec(line.trim());
    if (match?.[1] && match[2]) installed.set(match[1], match[2]);
  }
  return CHECKED_LOCKFILES.filter((name) => {
    const repo = files.find((file) => file.path === name);
    const hash = installed.get(name);
    if (!repo || !hash || repo.content.length > MAX_COMPARED_LOCKFILE) return false;
    return createHash('sha256').update(repo.content).digest('hex') !== hash;
  });
}

/** The changed lockfiles of a label value (unknown names dropped); undefined when not recorded. */
export function parseChangedLocks(label: string | undefined): CheckedLockfile[] | undefined {
  if (label === undefined) return undefined;
  const names = new Set(label.split(','));
  return CHECKED_LOCKFILES.filter((name) => names.has(name));
}
