import type { ManifestFile } from '../manifests.js';
import type { Detection } from '../provider.js';
import type { EnvEntry, InstallRecipe } from '../recipe.js';

/** What a provider adds to the built-in recipe: its install step, and the image's environment. */
export type ProviderInstall = Pick<InstallRecipe, 'install' | 'afterInstall' | 'installEnv' | 'notes'> & {
  /** ENV of the image beyond the provider's own (a yarn berry repo's linker). */
  env?: EnvEntry[];
};

/**
 * One provider of the built-in builder (node, python, go, rust, plain): adding a provider is
 * adding a file here that exports one of these and naming it in PROVIDER_RECIPES.
 */
export interface ProviderRecipe {
  /** The exported environment of its images, for the install and the box alike (HOME is common). */
  env(files: readonly ManifestFile[]): EnvEntry[];
  /** The install step's lines, its own environment and what the user is told. */
  install(files: readonly ManifestFile[], detection: Detection): ProviderInstall;
  /** The lifecycle links /work/repo/node_modules → /deps/node_modules (ESM does not read NODE_PATH). */
  linkNodeModules: boolean;
}
