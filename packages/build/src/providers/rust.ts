import { shellQuote } from '../_utils.js';
import { manifestDirs } from '../local-paths.js';
import type { ManifestFile } from '../manifests.js';
import type { ProviderRecipe } from './provider-recipe.js';

/** Rust: `cargo fetch` into /deps/cargo (build scripts run when code in the box builds). */
export const rustRecipe: ProviderRecipe = {
  env: () => [
    { name: 'CARGO_HOME', value: '/deps/cargo' },
    { name: 'PATH', value: '$PATH:/deps/cargo/bin', expand: true },
  ],
  install: (files) => ({ install: rustInstall(files), installEnv: [], notes: [] }),
  linkNodeModules: false,
};

function rustInstall(files: readonly ManifestFile[]): string[] {
  // cargo wants a target per package; the context has manifests only, so stub one where none is.
  const stubs = manifestDirs(files, 'Cargo.toml').map(
    (dir) =>
      `(cd ${shellQuote(dir || '.')} && mkdir -p src && { [ -e src/main.rs ] || [ -e src/lib.rs ] || : > src/lib.rs; })`,
  );
  return files.some((file) => file.path === 'Cargo.toml') ? [...stubs, 'cargo fetch'] : [];
}
