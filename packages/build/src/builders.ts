import { NixpacksMissingError } from './errors.js';
import type { ManifestFile } from './manifests.js';
import { nixpacksVersion } from './nixpacks-run.js';
import type { Detection } from './provider.js';
import type { InstallRecipe } from './recipe.js';

export type BuilderName = 'builtin' | 'nixpacks';

import type { BuilderChoice } from '@ca-sandbox/docker';

export type { BuilderChoice };

/**
 * Bump when the built-in Dockerfile template changes: it is part of the dephash key (8: the
 * install-scripts walk, the workspace root's link; 9: pip's report of what it built from source,
 * so a Python image built before does not report "no build ran" for want of it; 10: the repo view
 * became the default and needs the build's deps-view label, which older images lack; 11: pnpm's bin
 * shims name /work/repo in their NODE_PATH, not /deps/src).
 */
export const BUILTIN_VERSION = '11';

export interface RecipeInput {
  files: readonly ManifestFile[];
  detection: Detection;
  /** The manifests-only context on the host (nixpacks plans it). */
  manifestsDir: string;
}

/** A builder turns a manifests-only context into an install recipe. Another one (Railpack) slots in here. */
export interface Builder {
  readonly name: BuilderName;
  /** Enters the dephash key, so a new builder version never reuses an old image. */
  readonly version: string;
  recipe(input: RecipeInput): Promise<InstallRecipe>;
}

// The recipes (and yaml, which they parse with) load on a cache miss only: a cache hit needs the
// builder's name and version for the dephash, never its recipe.
export const builtinBuilder: Builder = {
  name: 'builtin',
  version: BUILTIN_VERSION,
  recipe: async ({ files, detection }) => (await import('./recipe.js')).builtinRecipe(files, detection),
};

function nixpacksBuilder(version: string): Builder {
  return {
    name: 'nixpacks',
    version: `${version}+${BUILTIN_VERSION}`,
    recipe: async ({ files, detection, manifestsDir }) => {
      const { nixpacksPlan, nixpacksRecipe } = await import('./nixpacks.js');
      return nixpacksRecipe(await nixpacksPlan(manifestsDir), files, detection);
    },
  };
}

/**
 * The builder for a choice: `builtin`; `nixpacks` (NixpacksMissingError when not on PATH);
 * `auto` = nixpacks when present, else built-in.
 */
export async function selectBuilder(choice: BuilderChoice): Promise<Builder> {
  if (choice === 'builtin') return builtinBuilder;
  const version = await nixpacksVersion();
  if (version) return nixpacksBuilder(version);
  if (choice === 'nixpacks') throw new NixpacksMissingError();
  return builtinBuilder;
}
