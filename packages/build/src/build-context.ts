import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve, sep } from 'node:path';
import type { Builder } from './builders.js';
import { CONTEXT_MANIFESTS } from './dockerfile.js';
import { ManifestReadError } from './errors.js';
import { unsafePathReason } from './manifest-names.js';
import type { ManifestFile } from './manifests.js';
import type { Detection } from './provider.js';
import { contextFiles, type InstallRecipe } from './recipe.js';
import { type Registries, registryInstallEnv } from './registries.js';

export interface InstallContextInput {
  /** A fresh, empty directory of ours (the build context). */
  context: string;
  files: readonly ManifestFile[];
  detection: Detection;
  builder: Builder;
  registries: Registries;
}

/**
 * Writes what the install reads into the build context (the manifests and install inputs; the CA
 * bundle is in the prep image) and returns the builder's recipe for them. The Dockerfile comes
 * later (writeDockerfile): it names images that are known only after this.
 */
export async function writeInstallContext(input: InstallContextInput): Promise<InstallRecipe> {
  const manifestsDir = join(input.context, CONTEXT_MANIFESTS);
  await mkdir(manifestsDir);
  const prepared = contextFiles(input.files);
  await writeManifests(manifestsDir, prepared.files);
  const recipe = await input.builder.recipe({
    files: input.files,
    detection: input.detection,
    manifestsDir,
  });
  recipe.notes.unshift(...prepared.notes);
  recipe.skippedScripts = prepared.skippedScripts;
  const repoPaths = new Set(input.files.map((file) => file.path));
  recipe.madeUpFiles = prepared.files.filter((file) => !repoPaths.has(file.path)).map((file) => file.path);
  // Later exports win: a configured mirror overrides the builder's own defaults (GOPROXY).
  recipe.installEnv.push(...registryInstallEnv(input.detection.provider, input.registries));
  return recipe;
}

/** Writes the rendered Dockerfile into the context; returns its path. */
export async function writeDockerfile(context: string, dockerfile: string): Promise<string> {
  const path = join(context, 'Dockerfile');
  await writeFile(path, dockerfile, { mode: 0o644 });
  return path;
}

/** Writes the manifests into a fresh directory; every path re-checked so nothing lands outside it. */
export async function writeManifests(dir: string, files: readonly ManifestFile[]): Promise<void> {
  const root = resolve(dir);
  for (const file of files) {
    const reason = unsafePathReason(file.path);
    if (reason)
      throw new ManifestReadError(
        `unsafe manifest path ${JSON.stringify(file.path.slice(0, 100))}: ${reason}`,
      );
    const target = resolve(root, ...file.path.split('/'));
    if (!target.startsWith(root + sep))
      throw new ManifestReadError(
        `manifest path escapes the context: ${JSON.stringify(file.path.slice(0, 100))}`,
      );
    await mkdir(resolve(target, '..'), { recursive: true, mode: 0o755 });
    await writeFile(target, file.content, { flag: 'wx', mode: 0o644 });
  }
}
