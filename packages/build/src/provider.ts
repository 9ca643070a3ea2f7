import type { Provider } from '@ca-sandbox/config';
import type { ManifestFile } from './manifests.js';

// The list lives with the settings (one base image per provider); re-exported for the build's callers.
export { PROVIDERS, type Provider } from '@ca-sandbox/config';

export interface Detection {
  provider: Provider;
  /** npm | pnpm | yarn | yarn-berry | bun (node); pip | poetry | uv | pipenv (python); go; cargo. */
  packageManager?: string;
  /** From package.json `packageManager` (validated `x.y.z`-like), when given. */
  packageManagerVersion?: string;
}

const VERSION = /^[0-9]+(\.[0-9]+){0,2}([-+][0-9A-Za-z.-]{1,40})?$/;

function rootFile(files: readonly ManifestFile[], name: string): ManifestFile | undefined {
  return files.find((file) => file.path === name);
}

function hasRoot(files: readonly ManifestFile[], ...names: string[]): boolean {
  return names.some((name) => rootFile(files, name) !== undefined);
}

/** package.json's `packageManager` ("pnpm@9.1.0+sha..."), parsed defensively: the file is hostile. */
export function packageManagerField(
  packageJson: Buffer | undefined,
): { name: string; version?: string } | undefined {
  if (!packageJson || packageJson.length > 4 * 1024 * 1024) return undefined;
  let json: unknown;
  try {
    json = JSON.parse(packageJson.toString('utf8'));
  } catch {
    return undefined;
  }
  const field = (json as { packageManager?: unknown } | null)?.packageManager;
  if (typeof field !== 'string') return undefined;
  const match = /^(npm|pnpm|yarn|bun)@([^+\s]+)/.exec(field.trim());
  if (!match?.[1]) return undefined;
  const version = match[2] && VERSION.test(match[2]) ? match[2] : undefined;
  return version ? { name: match[1], version } : { name: match[1] };
}

function nodeManager(
  files: readonly ManifestFile[],
): Pick<Detection, 'packageManager' | 'packageManagerVersion'> {
  const declared = packageManagerField(rootFile(files, 'package.json')?.content);
  const berry = (version?: string) =>
    hasRoot(files, '.yarnrc.yml') || (version !== undefined && !version.startsWith('1.'));
  if (declared) {
    const name = declared.name === 'yarn' && berry(declared.version) ? 'yarn-berry' : declared.name;
    return declared.version
      ? { packageManager: name, packageManagerVersion: declared.version }
      : { packageManager: name };
  }
  if (hasRoot(files, 'pnpm-lock.yaml')) return { packageManager: 'pnpm' };
  if (hasRoot(files, 'yarn.lock')) {
    const lock = rootFile(files, 'yarn.lock')?.content.subarray(0, 4096).toString('utf8') ?? '';
    return { packageManager: berry() || lock.includes('__metadata:') ? 'yarn-berry' : 'yarn' };
  }
  if (hasRoot(files, 'bun.lock', 'bun.lockb')) return { packageManager: 'bun' };
  return { packageManager: 'npm' };
}

function pythonManager(files: readonly ManifestFile[]): string {
  if (hasRoot(files, 'uv.lock')) return 'uv';
  const pyproject = rootFile(files, 'pyproject.toml')?.content.toString('utf8') ?? '';
  if (hasRoot(files, 'poetry.lock') || /^\s*\[tool\.poetry\]/m.test(pyproject)) return 'poetry';
  if (/^\s*\[tool\.uv[\].]/m.test(pyproject)) return 'uv';
  if (hasRoot(files, 'Pipfile', 'Pipfile.lock') && !files.some((f) => /^requirements.*\.txt$/.test(f.path)))
    return 'pipenv';
  return 'pip';
}

/**
 * The provider from the repo root's manifests, first match in the order node, python, go, rust;
 * anything else (or manifests only in subdirectories) is `plain`.
 */
export function detectProvider(files: readonly ManifestFile[]): Detection {
  if (
    hasRoot(
      files,
      'package.json',
      'package-lock.json',
      'npm-shrinkwrap.json',
      'pnpm-lock.yaml',
      'yarn.lock',
      'bun.lock',
      'bun.lockb',
    )
  ) {
    return { provider: 'node', ...nodeManager(files) };
  }
  const python = [
    'pyproject.toml',
    'poetry.lock',
    'uv.lock',
    'Pipfile',
    'Pipfile.lock',
    'setup.py',
    'setup.cfg',
  ];
  if (hasRoot(files, ...python) || files.some((f) => /^requirements[^/]*\.txt$/.test(f.path))) {
    return { provider: 'python', packageManager: pythonManager(files) };
  }
  if (hasRoot(files, 'go.mod', 'go.work')) return { provider: 'go', packageManager: 'go' };
  if (hasRoot(files, 'Cargo.toml')) return { provider: 'rust', packageManager: 'cargo' };
  return { provider: 'plain' };
}
