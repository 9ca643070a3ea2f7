import { createHash } from 'node:crypto';
import { DEPS_SRC } from '@ca-sandbox/docker';
import { shellQuote } from '../../_utils.js';
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

/**
 * Printed by the install step after the install: `<marker>-` first, then `<marker><name> <sha256
 * hex>` per installed root lockfile.
 */
export const LOCKFILE_MARKER = 'ca-sandbox-installed-lockfile: ';
const LOCKFILES_BEGIN = `${LOCKFILE_MARKER}-`;

/** Label of a deps image: the root lockfiles its install rewrote, comma-joined ('' none; absent: not recorded). */
export const LABEL_CHANGED_LOCKS = 'ca.sandbox.cache.changed-locks';

/** Largest lockfile compared (the link's comparison in the box reads no more either). */
export const MAX_COMPARED_LOCKFILE = 64 * 1024 * 1024;

/**
 * The install step's line that prints them: after every process of the install is gone
 * (InstallRecipe.afterInstall), so the bytes it hashes are the image's and no line of the
 * install's follows it; with the base's node, never a `node` bin of a dependency.
 */
export const LOCKFILE_HASHES = `PATH=/usr/local/bin:/usr/bin:/bin node -e ${shellQuote(
  `
const fs = require('fs'), crypto = require('crypto');
console.log(${JSON.stringify(LOCKFILES_BEGIN)});
for (const name of ${JSON.stringify(CHECKED_LOCKFILES)}) {
  const file = ${JSON.stringify(DEPS_SRC)} + '/' + name;
  try {
    const stat = fs.lstatSync(file);
    if (!stat.isFile() || stat.size > ${MAX_COMPARED_LOCKFILE}) continue;
    console.log(${JSON.stringify(LOCKFILE_MARKER)} + name + ' ' + crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex'));
  } catch {}
}
`.trim(),
)}`;

const MARKED = new RegExp(
  `^${LOCKFILE_MARKER}(${CHECKED_LOCKFILES.map((name) => name.replace(/\./g, '\\.')).join('|')}) ([0-9a-f]{64})$`,
);

/**
 * The repo's root lockfiles (of `files`, the manifests the image was built from) that the install
 * left with other bytes, by the marker lines of the build's output after the last `<marker>-`:
 * ours are printed after every process of the install is gone, so nothing of the repo's follows
 * them, and a marker line the repo printed before is not read. Undefined when the build printed
 * none (not a node install of ours): not recorded.
 */
export function changedLocksFromOutput(
  lines: readonly string[],
  files: readonly ManifestFile[],
): CheckedLockfile[] | undefined {
  const installed = new Map<string, string>();
  const begin = lines.findLastIndex((line) => line.trim() === LOCKFILES_BEGIN);
  if (begin < 0) return undefined;
  for (const line of lines.slice(begin + 1)) {
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
