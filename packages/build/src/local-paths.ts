import { posix } from 'node:path';
import type { ManifestFile } from './manifests.js';

/** Most path dependencies we put on PYTHONPATH (each becomes two entries). */
export const MAX_PATH_DEPS = 32;

// Paths that go into ENV lines and shell words: a conservative character set only.
const SAFE_REL = /^[A-Za-z0-9._@+-]+(\/[A-Za-z0-9._@+-]+)*$/;

/**
 * Normalises a local path reference from a manifest at `fromDir` into a repo-relative path, or
 * undefined when it leaves the repo, is absolute, or has characters we do not pass on.
 */
export function repoRelativePath(fromDir: string, ref: string): string | undefined {
  let target = ref.trim();
  if (target.startsWith('file://')) target = target.slice('file://'.length);
  else if (target.startsWith('file:')) target = target.slice('file:'.length);
  if (target.startsWith('/') || target.length === 0 || target.length > 512) return undefined;
  const joined = posix.normalize(posix.join(fromDir || '.', target)).replace(/\/+$/, '');
  if (joined === '.' || joined === '..' || joined.startsWith('../') || joined.startsWith('/'))
    return undefined;
  return SAFE_REL.test(joined) ? joined : undefined;
}

/** True when a requirements line names a local path (pip installs it from the source tree). */
export function requirementLocalPath(line: string): string | undefined {
  let spec = line.replace(/\s+#.*$/, '').trim();
  if (!spec || spec.startsWith('#')) return undefined;
  const editable = /^(-e|--editable)(=|\s+)(.*)$/.exec(spec);
  if (editable) spec = (editable[3] ?? '').trim();
  else if (spec.startsWith('-')) return undefined;
  const direct = /^[A-Za-z0-9._[\],-]+\s*@\s*(file:\S+)/.exec(spec);
  if (direct?.[1]) return direct[1];
  if (/^(\.{1,2}\/|\.$|\/|file:)/.test(spec)) return spec.split(/[\s;#[]/)[0];
  return undefined;
}

/** requirements*.txt lines without their local-path entries (those resolve from /work/repo at run time). */
export function filterRequirements(content: string): { text: string; removed: string[] } {
  const removed: string[] = [];
  const lines = content.split(/\r?\n/).map((line) => {
    if (requirementLocalPath(line) === undefined) return line;
    removed.push(line.trim());
    return `# ca-sandbox: local path resolved at run time: ${line.trim().replace(/[^\x20-\x7e]/g, '?')}`;
  });
  return { text: lines.join('\n'), removed };
}

/** True when a filtered requirements text still names something to install. */
export function hasInstallableRequirement(text: string): boolean {
  return text.split(/\r?\n/).some((line) => {
    const t = line.trim();
    return (
      t.length > 0 &&
      !t.startsWith('#') &&
      !/^(--?(index-url|extra-index-url|trusted-host|find-links|i|f)\b)/.test(t)
    );
  });
}

/**
 * Local path dependencies of a Python project, repo-relative: entries of requirements*.txt
 * (`./libs/x`, `-e ./libs/x`, `name @ file:./libs/x`) and `path = "..."` of pyproject.toml
 * (poetry, uv sources) and Pipfile. Only paths inside the repo are kept.
 */
export function pythonLocalPaths(files: readonly ManifestFile[]): string[] {
  const found = new Set<string>();
  for (const file of files) {
    const dir = posix.dirname(file.path) === '.' ? '' : posix.dirname(file.path);
    const base = posix.basename(file.path);
    const text = file.content.toString('utf8');
    if (/^requirements.*\.txt$/.test(base)) {
      for (const line of text.split(/\r?\n/)) {
        const ref = requirementLocalPath(line);
        const rel = ref === undefined ? undefined : repoRelativePath(dir, ref);
        if (rel) found.add(rel);
      }
    } else if (base === 'pyproject.toml' || base === 'Pipfile') {
      for (const match of text.matchAll(/\bpath\s*=\s*["']([^"'\n]{1,512})["']/g)) {
        const rel = repoRelativePath(dir, match[1] ?? '');
        if (rel) found.add(rel);
      }
    }
  }
  return [...found].sort().slice(0, MAX_PATH_DEPS);
}

/** Directories that hold a go.mod / Cargo.toml (repo-relative, '' for the root), safe names only. */
export function manifestDirs(files: readonly ManifestFile[], name: string, max = 64): string[] {
  const dirs = files
    .filter((file) => posix.basename(file.path) === name)
    .map((file) => (posix.dirname(file.path) === '.' ? '' : posix.dirname(file.path)))
    .filter((dir) => dir === '' || SAFE_REL.test(dir));
  return [...new Set(dirs)].sort().slice(0, max);
}
