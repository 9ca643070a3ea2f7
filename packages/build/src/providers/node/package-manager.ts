import { parse } from 'yaml';
import type { ManifestFile } from '../../manifests.js';
import type { Detection } from '../../provider.js';
import { filterYarnrcYml } from './context.js';

/** The package manager the box gets, installed while the network is on (npm global, no corepack). */
export interface PackageManagerPlan {
  /** npm | pnpm | yarn (classic) | yarn-berry | bun. */
  name: string;
  /** The npm package that carries it (`pnpm`, `yarn`, `@yarnpkg/cli-dist`, `npm`); none ⇒ the base's npm. */
  npmPackage?: string;
  /** Exact version or major, as given to `npm install -g <package>@<spec>`. */
  spec?: string;
  /** Where the version came from, for the notes. */
  source: string;
  /** yarn berry: the repo's release (`yarnPath`), a file of the context, repo-relative. */
  yarnPath?: string;
}

const SPEC = /^[0-9]+(\.[0-9]+){0,2}([-+][0-9A-Za-z.-]{1,40})?$/;

function root(files: readonly ManifestFile[], name: string): ManifestFile | undefined {
  return files.find((file) => file.path === name);
}

function yamlOf(file: ManifestFile | undefined): Record<string, unknown> | undefined {
  if (!file || file.content.length > 4 * 1024 * 1024) return undefined;
  try {
    const doc = parse(file.content.toString('utf8'), { maxAliasCount: 100 });
    return doc && typeof doc === 'object' && !Array.isArray(doc)
      ? (doc as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** pnpm-workspace.yaml keys pnpm 9 knows; any other top-level key is a pnpm 10+ setting. */
const PNPM9_WORKSPACE_KEYS = new Set(['packages', 'catalog', 'catalogs']);
/** Settings pnpm 11 introduced (allowBuilds replaces onlyBuiltDependencies there). */
const PNPM11_WORKSPACE_KEYS = new Set(['allowBuilds']);

/**
 * The pnpm major the lockfile and the workspace settings need, when nothing pins pnpm: lockfile
 * 5.3 → 6, 5.4 → 7, 6.x → 8, 9.0 → 9, or 10 when pnpm-workspace.yaml carries settings (pnpm 10
 * reads them there: onlyBuiltDependencies, overrides, patchedDependencies, ...), 11 when one of
 * them is pnpm 11's (allowBuilds). No lockfile → 10.
 */
export function pnpmMajor(files: readonly ManifestFile[]): { spec: string; source: string } {
  const workspace = yamlOf(root(files, 'pnpm-workspace.yaml'));
  const settings = Object.keys(workspace ?? {}).filter((key) => !PNPM9_WORKSPACE_KEYS.has(key));
  const head = root(files, 'pnpm-lock.yaml')?.content.subarray(0, 512).toString('utf8') ?? '';
  const lock = /^lockfileVersion:\s*['"]?([0-9]+(?:\.[0-9]+)?)/m.exec(head)?.[1];
  const newest = settings.filter((key) => PNPM11_WORKSPACE_KEYS.has(key));
  if (newest.length > 0) return { spec: '11', source: `pnpm-workspace.yaml settings (${newest.join(', ')})` };
  if (settings.length > 0)
    return { spec: '10', source: `pnpm-workspace.yaml settings (${settings.slice(0, 3).join(', ')})` };
  if (!lock) return { spec: '10', source: 'no pnpm lockfile' };
  const version = Number(lock);
  const spec = version >= 9 ? '9' : version >= 6 ? '8' : version >= 5.4 ? '7' : '6';
  return { spec, source: `pnpm-lock.yaml lockfileVersion ${lock}` };
}

/** yarn berry's version from the release file name (`yarn-4.5.1.cjs`), else the lockfile's era. */
function berrySpec(
  files: readonly ManifestFile[],
  yarnPath: string | undefined,
): { spec: string; source: string } {
  const fromName = yarnPath
    ? /(?:^|\/)yarn-([0-9]+\.[0-9]+\.[0-9]+(?:-[0-9A-Za-z.]+)?)\.c?js$/.exec(yarnPath)?.[1]
    : undefined;
  if (fromName) return { spec: fromName, source: yarnPath ?? '' };
  const head = root(files, 'yarn.lock')?.content.subarray(0, 2048).toString('utf8') ?? '';
  const metadata = Number(/__metadata:\s*\n\s*version:\s*([0-9]+)/.exec(head)?.[1] ?? Number.NaN);
  if (metadata >= 8) return { spec: '4', source: `yarn.lock metadata version ${metadata}` };
  if (metadata >= 6) return { spec: '3', source: `yarn.lock metadata version ${metadata}` };
  if (metadata >= 4) return { spec: '2', source: `yarn.lock metadata version ${metadata}` };
  return { spec: '4', source: 'default' };
}

/**
 * Which package manager, which version: the `packageManager` field, else the repo's yarn release
 * (`yarnPath`), else what the lockfile's version needs. npm without a pin is the base image's.
 */
export function planPackageManager(files: readonly ManifestFile[], detection: Detection): PackageManagerPlan {
  const pinned = detection.packageManagerVersion && SPEC.test(detection.packageManagerVersion);
  const declared = pinned
    ? { spec: detection.packageManagerVersion as string, source: 'packageManager' }
    : undefined;
  switch (detection.packageManager) {
    case 'pnpm':
      return { name: 'pnpm', npmPackage: 'pnpm', ...(declared ?? pnpmMajor(files)) };
    case 'yarn':
      return {
        name: 'yarn',
        npmPackage: 'yarn',
        ...(declared ?? { spec: '1', source: 'yarn.lock (classic)' }),
      };
    case 'yarn-berry': {
      const rc = root(files, '.yarnrc.yml');
      const paths = new Set(files.map((file) => file.path));
      const yarnPath = rc ? filterYarnrcYml(rc.content.toString('utf8'), '', paths).yarnPath : undefined;
      const wanted = declared ?? berrySpec(files, yarnPath);
      if (!yarnPath) return { name: 'yarn-berry', npmPackage: '@yarnpkg/cli-dist', ...wanted };
      // With the repo's release in the context, the npm package is only the launcher that hands
      // over to it, in the build and in the box: its major will do. The exact version may be one
      // the registry never had (typanion pins yarn-4.0.0-rc.2.cjs: npm's ETARGET sank the build).
      return {
        name: 'yarn-berry',
        npmPackage: '@yarnpkg/cli-dist',
        spec: wanted.spec.split('.')[0] ?? wanted.spec,
        source:
          wanted.source === yarnPath
            ? `the repo's release ${yarnPath}, which it launches`
            : `${wanted.source}; it launches the repo's release ${yarnPath}`,
        yarnPath,
      };
    }
    case 'npm':
      return declared
        ? { name: 'npm', npmPackage: 'npm', ...declared }
        : { name: 'npm', source: 'the base image' };
    default:
      return { name: detection.packageManager ?? 'npm', source: 'the base image' };
  }
}
