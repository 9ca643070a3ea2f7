import { posix } from 'node:path';
import { REPO_DIR } from '@ca-sandbox/docker';
import { filterRequirements } from './local-paths.js';
import type { ManifestFile } from './manifests.js';
import type { Detection, Provider } from './provider.js';
import { PROVIDER_RECIPES } from './providers/index.js';
import { nodeContextFiles } from './providers/node/context.js';

/** One ENV entry. `expand` lets docker substitute `$PATH`; only our own constants use it. */
export interface EnvEntry {
  name: string;
  value: string;
  expand?: boolean;
}

/** What a builder decides: the commands of the install step and the environment of the image. */
export interface InstallRecipe {
  provider: Provider;
  /** Shell lines, run by /bin/sh -eu as 1000:1000 in /deps/src; empty ⇒ no install step. */
  install: string[];
  /** ENV of the image (set before the install step, so the install uses the same paths). */
  env: EnvEntry[];
  /** Extra variables for the install step only. */
  installEnv: EnvEntry[];
  /**
   * Shell lines of ours after every process of the install is gone (END_INSTALL_PROCESSES): what
   * they print about the install's result nothing of the repo's can follow, nor change what they read.
   */
  afterInstall?: string[];
  notes: string[];
  /** The repo's own lifecycle scripts left out of the install (`path (names)`): the report says them. */
  skippedScripts?: string[];
  /**
   * Files of the context that are not the repo's (the empty stand-ins for its packages' `bin`
   * targets), relative to /deps/src: removed when the install is done, so the install's layer,
   * a repo view's lower, never shows them under /work/repo.
   */
  madeUpFiles?: string[];
  /** The lifecycle links /work/repo/node_modules → /deps/node_modules (ESM does not read NODE_PATH). */
  linkNodeModules: boolean;
}

/** The exported environment of each provider: deps out of tree, HOME on the tmpfs. */
export function providerEnv(provider: Provider, files: readonly ManifestFile[]): EnvEntry[] {
  return [{ name: 'HOME', value: '/tmp' }, ...PROVIDER_RECIPES[provider].env(files)];
}

/**
 * The manifests as they go into the build context: requirements*.txt lose their local-path
 * entries (the source is not in the context; those paths resolve from /work/repo at run time);
 * package.json files lose the repo's own lifecycle scripts and rc files the settings a repo never
 * chooses (see providers/node/context.ts).
 */
export function contextFiles(files: readonly ManifestFile[]): {
  files: ManifestFile[];
  notes: string[];
  skippedScripts: string[];
} {
  const notes: string[] = [];
  const out = files.map((file) => {
    if (!/^requirements.*\.txt$/.test(posix.basename(file.path))) return file;
    const { text, removed } = filterRequirements(file.content.toString('utf8'));
    if (removed.length === 0) return file;
    notes.push(
      `${file.path}: ${removed.length} local path requirement(s) not installed; they resolve from ${REPO_DIR} via PYTHONPATH`,
    );
    return { path: file.path, content: Buffer.from(text, 'utf8') };
  });
  const node = nodeContextFiles(out);
  return { files: node.files, notes: [...notes, ...node.notes], skippedScripts: node.skippedScripts };
}

/** The built-in builder's recipe for a detected provider: its part (providers/) and the common one. */
export function builtinRecipe(files: readonly ManifestFile[], detection: Detection): InstallRecipe {
  const provider = PROVIDER_RECIPES[detection.provider];
  const part = provider.install(files, detection);
  return {
    provider: detection.provider,
    install: part.install,
    ...(part.afterInstall ? { afterInstall: part.afterInstall } : {}),
    installEnv: part.installEnv,
    notes: part.notes,
    env: [...providerEnv(detection.provider, files), ...(part.env ?? [])],
    linkNodeModules: provider.linkNodeModules,
  };
}
