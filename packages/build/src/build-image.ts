import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import {
  BUILD_LABEL,
  BUILD_LABEL_DEPHASH,
  BUILD_LABEL_REPO,
  buildStepLabels,
  CACHE_LABEL,
  CACHE_LABEL_DEPHASH,
  CACHE_LABEL_REPO,
  CACHE_LABEL_SOURCE,
  CONFINEMENT_MARKER,
  DEPS_VIEW_LABEL_VALUE,
  DockerNotFoundError,
  engine,
  formatSize,
  type ImageInspect,
  installConfinementRows,
  LABEL_DEPS_VIEW,
  UNOWNED_IMAGE_LABELS,
} from '@ca-sandbox/docker';
import { InvariantError } from '@ca-sandbox/docker/contracts';
import { ensureBaseImage, resolveBaseImage } from './base-image.js';
import { buildArgv } from './build-argv.js';
import { removeBuildImages, removeImage } from './build-cleanup.js';
import { writeDockerfile, writeInstallContext } from './build-context.js';
import { buildDirPrefix } from './build-leftovers.js';
import type { Builder } from './builders.js';
import { type ExtraCa, LABEL_CA } from './ca-trust.js';
import { ensureClaudeImage } from './claude-code.js';
import { depsImageBytes } from './deps-size.js';
import { assertDepsViewLower } from './deps-view-check.js';
import {
  CONTEXT_MANIFESTS,
  installCommand,
  LABEL_BUILD_ID,
  type RenderOptions,
  renderDockerfile,
} from './dockerfile.js';
import { DepsImageTooLargeError, InstallConfinementError } from './errors.js';
import { LABEL_CACHE_BUILDER, LABEL_CACHE_PROVIDER } from './image-cache.js';
import { imageToolchain } from './image-toolchain.js';
import {
  type InstallFallback,
  installFallbacksFromOutput,
  LABEL_INSTALL_FALLBACKS,
} from './install-fallbacks.js';
import { installEnv, manifestsArchive } from './install-image.js';
import { InstallLog } from './install-log.js';
import {
  formatInstallScripts,
  InstallScriptsLines,
  installScriptsFromOutput,
  LABEL_INSTALL_SCRIPTS,
  LABEL_SKIPPED_SCRIPTS,
  parseSkippedScripts,
} from './install-scripts.js';
import type { ManifestFile } from './manifests.js';
import { ensurePrepImage } from './prep-image.js';
import type { PrepareEvent, ResolvedPrepareOptions } from './prepare-options.js';
import type { Detection, Provider } from './provider.js';
import {
  type CheckedLockfile,
  changedLocksFromOutput,
  LABEL_CHANGED_LOCKS,
  LOCKFILE_MARKER,
} from './providers/node/lockfiles.js';
import { nodeRuntimeFor, withNodeRuntime } from './providers/node/runtime.js';
import { runQuietBuild } from './quiet-build.js';
import type { InstallRecipe } from './recipe.js';
import { maskSecrets, registrySecrets } from './registries.js';
import { removeInstallContainer, runInstall } from './run-install.js';
import { sourceKey } from './tag.js';
import {
  formatToolchain,
  LABEL_TOOLCHAIN,
  TOOLCHAIN_MARKER,
  type Toolchain,
  toolchainFromOutput,
} from './toolchain.js';

export interface BuildImageInput {
  opts: ResolvedPrepareOptions;
  files: ManifestFile[];
  detection: Detection;
  /** The box's provider, for the cache label: a manifest-less root's choice, else detection's. */
  provider: Provider;
  builder: Builder;
  baseImage: string;
  /** Its id: the key of its prep image. */
  baseImageId: string;
  image: string;
  dephash: string;
  /** The user's CA bundle (the install and the box trust it), baked into the prep image. */
  ca: ExtraCa | undefined;
  emit: (event: PrepareEvent) => void;
  log: (line: string) => void;
}

/**
 * The cold path: writes the context, builds the deps image under the limits, holds it to the
 * deps cap and labels its toolchain. Whatever fails, the context directory goes and the install
 * log is kept (its path in the `build-failed` event).
 */
export async function buildImage(input: BuildImageInput): Promise<{
  recipe: InstallRecipe;
  toolchain: Toolchain;
  installFallbacks: InstallFallback[];
  changedLocks: CheckedLockfile[] | undefined;
  skippedScripts: string[];
}> {
  const { opts, builder, image, emit } = input;
  const secrets = registrySecrets(opts.registries);
  const log = (line: string) => input.log(maskSecrets(line, secrets));
  // The pid in the name lets `prune --images` tell a killed build's directory from a live one.
  const context = await mkdtemp(buildDirPrefix());
  const buildId = randomBytes(12).toString('hex');
  let installLog: InstallLog | undefined;
  try {
    const written = await writeInstallContext({
      context,
      files: input.files,
      detection: input.detection,
      builder,
      registries: opts.registries,
    });
    // A Node pin the base does not meet: the pinned release comes first (providers/node/runtime.ts).
    const runtime =
      input.detection.provider === 'node'
        ? nodeRuntimeFor(input.files, await imageToolchain(input.baseImage))
        : undefined;
    const recipe = runtime ? withNodeRuntime(written, runtime) : written;
    const buildLabels = {
      [BUILD_LABEL]: '1',
      [BUILD_LABEL_REPO]: opts.repoPart,
      [BUILD_LABEL_DEPHASH]: input.dephash,
      ...(opts.sandboxId ? buildStepLabels(opts.sandboxId) : {}),
    };
    const claudeImage = opts.withClaude ? await claudeImageFor(opts, log) : undefined;
    // The root step (folders, setuid strip) is the base's prep image, built once per base.
    const prepImage = await ensurePrepImage({
      baseImage: input.baseImage,
      baseImageId: input.baseImageId,
      ca: input.ca,
      limits: opts.limits,
      timeoutMs: opts.buildTimeoutMs,
      log,
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
    // A node install of the built-in recipe is the image's top layer and always leaves
    // /deps/src/node_modules (NODE_FINISH): that layer's /deps/src can be the lower of a box's
    // repo view (@ca-sandbox/docker repo-view.ts), and the image says so.
    const depsView = builder.name === 'builtin' && recipe.linkNodeModules && recipe.install.length > 0;
    const renderOptions: RenderOptions = {
      ...(depsView ? { depsViewLower: true } : {}),
      ...(claudeImage ? { claudeImage } : {}),
      extraCa: input.ca !== undefined,
      buildId,
      sourceKey: sourceKey(opts.source),
      buildLabels,
      image,
      limits: opts.limits,
    };
    const installs = recipe.install.length > 0;
    // The way out (the gateway re-pointed at the registries: an exec and its log, ~100 ms) opens
    // beside what makes the install's image, which needs no network. A failure leaves it to the
    // caller's clean-up, as a failed install does.
    const opening =
      installs && opts.egress ? opts.egress(input.detection.provider) : Promise.resolve(undefined);
    opening.catch(() => undefined);
    const startedAt = Date.now();
    const { preInstall, ...start } = claudeImage
      ? await builtStart(context, prepImage, recipe, renderOptions, opts, image, buildId)
      : await prepStart(context, prepImage, recipe, renderOptions);
    const egress = await opening;
    const network = installs ? (egress?.network ?? 'bridge') : 'none';
    emit({ type: 'build', image, network });
    log(
      `install for ${image} (network ${network}, memory ${opts.buildMemory}, ${opts.buildCpus} cpus, time limit ${opts.buildTimeoutMs / 1000} s, deps cap ${formatSize(opts.maxDepsSize)})`,
    );
    installLog = await InstallLog.open(`${opts.repoPart}-${input.dephash}-${Date.now()}`);
    // pip's build lines and the walks' markers, from the whole output (InstallScriptsLines).
    const scriptLines = new InstallScriptsLines();
    // The step's first marked line is its own (printed before the repo's code runs): later ones are not.
    let confinement: string | undefined;
    // The installed lockfiles' hashes, from the whole output (the tail may have lost them); the
    // last few only: a repo printing the marker in a loop gains nothing but its own lines.
    const lockfileLines: string[] = [];
    // The probe's line ends the install step; docker then commits what it wrote as the image's
    // layer, file by file (about 0.45 ms a file here: 20 s for 43,000), printing nothing.
    let committing = false;
    // What the pre-install build took is the install's less.
    const remainingMs = Math.max(1000, opts.buildTimeoutMs - (Date.now() - startedAt));
    const install = runInstall({
      onLine: (line, layerBytes) => {
        if (!committing && installs && line.startsWith(TOOLCHAIN_MARKER)) {
          committing = true;
          log(committingLine(layerBytes));
        }
        if (confinement === undefined && line.startsWith(CONFINEMENT_MARKER)) confinement = line;
        if (line.startsWith(LOCKFILE_MARKER) && lockfileLines.push(line) > 16) lockfileLines.shift();
        scriptLines.push(line);
      },
      image,
      ...start,
      command: installCommand(recipe, { ...renderOptions, ...(egress ? { proxyUrl: egress.proxyUrl } : {}) }),
      network,
      limits: opts.limits,
      labels: { ...buildLabels, [LABEL_BUILD_ID]: buildId },
      buildId,
      log,
      installLog,
      timeoutMs: remainingMs,
      timeLimitMs: opts.buildTimeoutMs,
      maxDepsSize: opts.maxDepsSize,
      caFile: opts.caFile,
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
    // A step its guard stopped (confinementGuard) fails the build: the error names the rows.
    const { container, tail: lines } = await install.catch((error: unknown) => {
      const failures = installConfinementRows(confinement, opts.limits).filter((row) => !row.pass);
      throw confinement !== undefined && failures.length
        ? new InstallConfinementError(image, failures)
        : error;
    });
    const toolchain = toolchainFromOutput(lines);
    const installFallbacks = installFallbacksFromOutput(lines);
    // Node's install step prints its root lockfiles' hashes; other providers and builders none.
    const changedLocks = changedLocksFromOutput(lockfileLines, input.files);
    // Repo-chosen paths: printable ASCII only, as in a Dockerfile LABEL line before.
    const skipped = skippedScriptsLabel(recipe.skippedScripts ?? []);
    try {
      const installScripts = installScriptsFromOutput(scriptLines.lines);
      const rows = installConfinementRows(confinement, opts.limits);
      const failures = rows.filter((row) => !row.pass);
      if (failures.length) throw new InstallConfinementError(image, failures);
      log(`install step confined: ${rows.map((row) => row.id).join(', ')} (checked from inside it)`);
      const committing = Date.now();
      const built = await commitInstall(container, preInstall, {
        [CACHE_LABEL]: '1',
        [CACHE_LABEL_DEPHASH]: input.dephash,
        [CACHE_LABEL_REPO]: opts.repoPart,
        [CACHE_LABEL_SOURCE]: opts.imageSource,
        [LABEL_CACHE_PROVIDER]: input.provider,
        [LABEL_CACHE_BUILDER]: builder.name,
        [LABEL_TOOLCHAIN]: formatToolchain(toolchain),
        ...(input.ca ? { [LABEL_CA]: input.ca.hash } : {}),
        ...(installFallbacks.length ? { [LABEL_INSTALL_FALLBACKS]: installFallbacks.join(',') } : {}),
        // On a node image from BUILTIN_VERSION 11 (maybe empty): a repo view's box reads it
        // instead of comparing in the box; absent means "not recorded".
        ...(changedLocks ? { [LABEL_CHANGED_LOCKS]: changedLocks.join(',') } : {}),
        // Present (maybe empty) on every image built from now on: its absence means "not recorded".
        [LABEL_INSTALL_SCRIPTS]: formatInstallScripts(installScripts, scriptLines.incomplete),
        // Always set (maybe empty): a base that is itself a deps image must not lend its own.
        [LABEL_SKIPPED_SCRIPTS]: skipped,
        // Always set: a base that is itself a deps image must not lend its label to this one.
        [LABEL_DEPS_VIEW]: depsView ? DEPS_VIEW_LABEL_VALUE : '0',
        ...(opts.sandboxId ? UNOWNED_IMAGE_LABELS : {}),
      });
      log(
        `the install's layer is saved: the deps image (docker's commit: ${formatSeconds(Date.now() - committing)})`,
      );
      // A write between two looks of the watch: the image itself is held to the cap too.
      const added = await depsImageBytes(built, input.baseImage);
      if (added > opts.maxDepsSize) throw new DepsImageTooLargeError(image, opts.maxDepsSize, added, 'image');
      // A repo view's lower is resolved on the host: /deps and /deps/src must be directories.
      if (depsView)
        await assertDepsViewLower(built, image, `ca-sbx_check-${buildId}`, {
          ...buildLabels,
          [LABEL_BUILD_ID]: buildId,
        });
      // The tag last: it names a complete, checked image only.
      await tagImage(built, image);
    } catch (error) {
      // Every image of this build carries its id (the committed one too, from its container).
      await removeImage(image);
      await removeBuildImages(buildId);
      throw error;
    } finally {
      await removeInstallContainer(container);
    }
    emit({ type: 'built', image });
    await installLog.discard();
    return {
      recipe,
      toolchain,
      installFallbacks,
      changedLocks,
      skippedScripts: parseSkippedScripts(skipped),
    };
  } catch (error) {
    // Whatever failed between the steps (the pre-install image made, the install not yet run):
    // every image of this build carries its id.
    await removeBuildImages(buildId);
    await installLog?.close();
    emit({ type: 'build-failed', image, ...(installLog ? { logFile: installLog.path } : {}) });
    throw error;
  } finally {
    await rm(context, { recursive: true, force: true });
  }
}

/**
 * The install's container starts from the prep image itself (no build: ~0.4 s less, and no legacy
 * builder on the per-repo path): the recipe's variables resolved as the Dockerfile's ENV lines
 * were, and the manifests, owned by the box user, put into it before it starts.
 */
async function prepStart(
  context: string,
  prepImage: string,
  recipe: InstallRecipe,
  renderOptions: RenderOptions,
): Promise<InstallStart> {
  // Written, not built: its LABEL line names this build to `prune --images` while it runs
  // (build-leftovers.ts liveBuilds), before the install container or its image exists.
  await writeDockerfile(context, renderDockerfile(prepImage, recipe, renderOptions));
  const prep = await inspectPreInstall(prepImage);
  return {
    // By tag, as prep-image.ts hands it out: a concurrent first build of the same prep image
    // may move the tag (to an equal image) and remove the one it replaced.
    preInstallImage: prepImage,
    preInstall: prep,
    env: installEnv(prep.Config.Env, recipe.env),
    manifests: await manifestsArchive(join(context, CONTEXT_MANIFESTS)),
  };
}

/**
 * With Claude Code, the image the install runs in is built (renderDockerfile: the binary comes by
 * `COPY --from` its image): the manifests, the binary, the install user, the ENV. Nothing of the
 * repo's runs in its build (no RUN), so it needs no network. Untagged: named by its id.
 */
async function builtStart(
  context: string,
  prepImage: string,
  recipe: InstallRecipe,
  renderOptions: RenderOptions,
  opts: ResolvedPrepareOptions,
  image: string,
  buildId: string,
): Promise<InstallStart> {
  const dockerfilePath = await writeDockerfile(context, renderDockerfile(prepImage, recipe, renderOptions));
  const iidFile = join(context, 'image.id');
  await runQuietBuild({
    argv: buildArgv({ network: 'none', iidFile, dockerfile: dockerfilePath, context, limits: opts.limits }),
    image,
    timeoutMs: opts.buildTimeoutMs,
    memory: opts.buildMemory,
    ...(opts.signal ? { signal: opts.signal } : {}),
    cleanup: () => removeBuildImages(buildId),
  });
  const preInstallImage = (await readFile(iidFile, 'utf8')).trim();
  return { preInstallImage, preInstall: await inspectPreInstall(preInstallImage) };
}

/** The image the install runs in, by the ref its container is made from, with its config (read once). */
interface InstallStart {
  preInstallImage: string;
  /** Its CMD and ENTRYPOINT are the committed image's (commitInstall); its Env the base of installEnv. */
  preInstall: ImageInspect;
  env?: string[];
  manifests?: Buffer;
}

async function inspectPreInstall(ref: string): Promise<ImageInspect> {
  const inspected = await engine.image.inspect(ref);
  if (!inspected) throw new DockerNotFoundError('image inspect', `No such image: ${ref}`);
  return inspected;
}

/** The Claude Code image (built now unless cached), from the node base image of the settings. */
async function claudeImageFor(opts: ResolvedPrepareOptions, log: (line: string) => void): Promise<string> {
  const nodeBase = resolveBaseImage('node', opts.baseImages ? { baseImages: opts.baseImages } : {}).image;
  const nodeBaseId = await ensureBaseImage(nodeBase, 'node', opts.signal);
  return ensureClaudeImage({
    nodeBaseImage: nodeBase,
    nodeBaseImageId: nodeBaseId,
    registries: opts.registries,
    ...(opts.caCertificates ? { caCertificates: opts.caCertificates } : {}),
    limits: opts.limits,
    timeoutMs: opts.buildTimeoutMs,
    ...(opts.claudeEgress ? { egress: opts.claudeEgress } : {}),
    ...(opts.sandboxId ? { sandboxId: opts.sandboxId } : {}),
    log,
    ...(opts.signal ? { signal: opts.signal } : {}),
  });
}

/**
 * Said once the install step printed its toolchain line (the repo's code could print one earlier:
 * the note then comes early, nothing else changes): what the build waits for next, and why. The
 * step still empties its /tmp (pnpm's store: seconds for a big monorepo) and checks /deps/src.
 */
export function committingLine(layerBytes: number): string {
  const written = layerBytes > 0 ? ` (${formatSize(layerBytes)} written)` : '';
  return `the install is done${written}: cleaning up, then docker saves it as the deps image's layer (later creates of this checkout start from it)`;
}

/** Characters of the skipped-scripts label (a label must stay small). */
const SKIPPED_LABEL_MAX = 4096;

/**
 * The repo's own skipped scripts as the label holds them (`; `-joined, printable ASCII only in a
 * Dockerfile LABEL line: repo-chosen paths), whole entries only, so the cold create and a cache
 * hit (parseSkippedScripts of the label) name the same ones.
 */
export function skippedScriptsLabel(entries: readonly string[]): string {
  const kept: string[] = [];
  let length = 0;
  for (const entry of entries) {
    // `;` too: the label's separator never stands inside an entry.
    const clean = entry.replace(/[^\x20-\x7e]|;/g, '?');
    length += (kept.length ? 2 : 0) + clean.length;
    if (length > SKIPPED_LABEL_MAX) break;
    kept.push(clean);
  }
  return kept.join('; ');
}

/**
 * The install's layer as an untagged image with the cache labels (one commit: no label step).
 * The engine would keep the container's command (the install step) as the image's CMD: it gets
 * the pre-install image's (a shell when that has none), and its ENTRYPOINT.
 */
async function commitInstall(
  container: string,
  preInstall: ImageInspect,
  labels: Record<string, string>,
): Promise<string> {
  return engine.container.commit(container, {
    labels,
    comment: 'ca-sandbox: the dependency install (its script and output: the install log)',
    cmd: preInstall.Config.Cmd.length ? preInstall.Config.Cmd : ['/bin/sh'],
    entrypoint: preInstall.Config.Entrypoint,
  });
}

/** Tags `image` (`repository:tag`) on the image `id`. */
async function tagImage(id: string, image: string): Promise<void> {
  const at = image.lastIndexOf(':');
  if (at <= 0 || image.lastIndexOf('/') > at) throw new InvariantError(`invalid image name ${image}`);
  await engine.image.tag(id, image.slice(0, at), image.slice(at + 1));
}

/** `3.4 s` */
function formatSeconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}
