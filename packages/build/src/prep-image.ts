import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  BUILD_LABEL,
  BUILD_LABEL_REPO,
  CACHE_IMAGE_REPOSITORY,
  CACHE_LABEL,
  engine,
} from '@ca-sandbox/docker';
import { type BuildLimits, buildArgv } from './build-argv.js';
import { removeBuildImages } from './build-cleanup.js';
import { buildDirPrefix } from './build-leftovers.js';
import { CONTEXT_EXTRA_CA, type ExtraCa } from './ca-trust.js';
import { LABEL_BUILD_ID, renderPrepDockerfile } from './dockerfile.js';
import { runQuietBuild } from './quiet-build.js';

/** The build repo label of prep builds (a label value starts with a letter or digit). */
export const PREP_REPO = 'ca-sbx-prep';

/**
 * `ca-sbx:_prep-<12 hex>`: the key is the base image's id, the prep Dockerfile (its build id
 * left out) and the digest of the user's CA bundle baked into it (none: no such part), so a new
 * base, a changed root step or a changed bundle is a new prep image. In the cache repository:
 * `prune --images` removes it (an image of a deps build FROM it keeps it as an untagged parent,
 * removed with its last child).
 */
export function prepImageTag(baseImageId: string, caHash?: string): string {
  const dockerfile = renderPrepDockerfile('base', {}, { extraCa: caHash !== undefined });
  const key = createHash('sha256')
    .update(`${baseImageId}\n${dockerfile}${caHash === undefined ? '' : `\nca ${caHash}`}`)
    .digest('hex')
    .slice(0, 12);
  return `${CACHE_IMAGE_REPOSITORY}:_prep-${key}`;
}

export interface PrepImageInput {
  baseImage: string;
  baseImageId: string;
  /** The user's CA bundle: baked root's into the prep image (see ca-trust.ts). */
  ca?: ExtraCa | undefined;
  limits: BuildLimits;
  timeoutMs: number;
  log: (line: string) => void;
  signal?: AbortSignal;
}

/**
 * The base's prep image, by its tag, built now unless it exists: the root step of every deps build
 * (the deps and repo folders, the setuid strip, the setpriv check) as an image of its own, so a
 * cold deps build starts from it instead of running that step (~1.5 s: a RUN walking the whole
 * root) and committing it again. Nothing of the repo is in it: no network, no context but the
 * Dockerfile. A failed or stopped build leaves nothing (its images carry its build id).
 *
 * Named by its tag, not its id: two creates that build it at once each tag their own, the later
 * tag wins, and the earlier image, untagged, goes with the last image built on it (a removal
 * cascades to untagged parents); a deps build that had its id in hand then failed with "unable
 * to find image" (seen twice in the suite). The tag always names a prep image of the same base,
 * CA and recipe, which is all the deps build needs of it.
 */
export async function ensurePrepImage(input: PrepImageInput): Promise<string> {
  const tag = prepImageTag(input.baseImageId, input.ca?.hash);
  const cached = await engine.image.inspect(tag).catch(() => undefined);
  if (cached) return tag;
  const context = await mkdtemp(buildDirPrefix());
  const buildId = randomBytes(12).toString('hex');
  try {
    const dockerfile = join(context, 'Dockerfile');
    if (input.ca) await writeFile(join(context, CONTEXT_EXTRA_CA), input.ca.pem, { mode: 0o644 });
    await writeFile(
      dockerfile,
      renderPrepDockerfile(
        input.baseImage,
        { [LABEL_BUILD_ID]: buildId, [BUILD_LABEL]: '1', [BUILD_LABEL_REPO]: PREP_REPO },
        { extraCa: input.ca !== undefined },
      ),
      { mode: 0o644 },
    );
    const iidFile = join(context, 'image.id');
    const argv = buildArgv({
      image: tag,
      iidFile,
      network: 'none',
      labels: { [CACHE_LABEL]: '1' },
      dockerfile,
      context,
      limits: input.limits,
    });
    input.log(
      `docker build ${tag} (the root step of deps images on ${input.baseImage}, once per base image)`,
    );
    await runQuietBuild({
      argv,
      image: tag,
      timeoutMs: input.timeoutMs,
      memory: input.limits.memory,
      ...(input.signal ? { signal: input.signal } : {}),
      cleanup: () => removeBuildImages(buildId),
    });
    const built = (await readFile(iidFile, 'utf8')).trim();
    // A concurrent first build of the same prep image may have taken the tag since. Ours is then
    // untagged, and it stays: another create may have started its deps build FROM the tag while
    // it named ours, and removing ours before that build's first step made a child of it failed
    // that build ("unable to find image sha256:…": a failure of that kind was seen in CI, where
    // every test file's first build finds no prep image and builds one). Untagged, it
    // carries its build's labels: `prune --images` takes it once nothing builds on it.
    const tagged = await engine.image.inspect(tag).catch(() => undefined);
    // The tag gone meanwhile (a prune): this build's own image, by id.
    return tagged ? tag : built;
  } finally {
    await rm(context, { recursive: true, force: true });
  }
}
