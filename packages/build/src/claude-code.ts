import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  BOX_USER,
  BUILD_LABEL,
  BUILD_LABEL_REPO,
  buildStepLabels,
  CACHE_IMAGE_REPOSITORY,
  CACHE_LABEL,
  engine,
  UNOWNED_IMAGE_LABELS,
} from '@ca-sandbox/docker';
import { shellQuote } from './_utils.js';
import { readExtraCa, resolveCaCertificates } from './base-image.js';
import { type BuildLimits, buildArgv } from './build-argv.js';
import { buildDirPrefix } from './build-leftovers.js';
import { CA_BUNDLE_SCRIPT, CA_COPY_LINE, CONTEXT_EXTRA_CA } from './ca-trust.js';
import { noteCacheUse } from './cache-limit.js';
import {
  CLAUDE_CODE_PACKAGE,
  CLAUDE_CODE_STAGE_BINARY,
  CLAUDE_CODE_VERSION,
  LABEL_CLAUDE_CODE,
  CLAUDE_STAGE_PREFIX as STAGE_PREFIX,
} from './claude-code-pin.js';
import { EXTRA_CA_SETUP, LABEL_BUILD_ID, NO_NEW_PRIVS, runLine, shellEnv } from './dockerfile.js';
import { labelInstruction } from './image-toolchain.js';
import { runQuietBuild } from './quiet-build.js';
import { type Registries, registryInstallEnv } from './registries.js';

/**
 * The Dockerfile of the Claude Code image: FROM the node base (npm runs the install and the
 * package's postinstall, which links the native binary), as 1000:1000 without new privileges, the
 * registry reached through the gateway the build is given. The binary must answer `--version`.
 */
export function renderClaudeDockerfile(
  nodeBaseImage: string,
  options: { extraCa: boolean; buildId: string; registries: Registries; sandboxId?: string },
): string {
  const install = [
    'set -eu',
    ...(options.extraCa ? EXTRA_CA_SETUP : []),
    ...shellEnv(registryInstallEnv('node', options.registries)),
    `npm install --global --prefix ${STAGE_PREFIX} --no-audit --no-fund --loglevel=error ${shellQuote(`${CLAUDE_CODE_PACKAGE}@${CLAUDE_CODE_VERSION}`)}`,
    `${CLAUDE_CODE_STAGE_BINARY} --version`,
    `chmod -R go-w ${STAGE_PREFIX}`,
    'find /tmp -mindepth 1 -maxdepth 1 -user "$(id -u)" -exec rm -rf {} + 2>/dev/null || true',
  ].join('\n');
  return [
    `FROM ${nodeBaseImage}`,
    // The build labels of every deps build: what a killed build leaves is found by `prune --images`.
    // With a sandbox, its labels too (buildStepLabels): its destroy or prune stops a killed build.
    labelInstruction({
      [LABEL_BUILD_ID]: options.buildId,
      [BUILD_LABEL]: '1',
      [BUILD_LABEL_REPO]: 'claude-code',
      ...(options.sandboxId ? buildStepLabels(options.sandboxId) : {}),
    }),
    'USER 0:0',
    // The user's CA bundle, root's, as in a prep image (see ca-trust.ts).
    ...(options.extraCa ? [CA_COPY_LINE] : []),
    runLine(
      `mkdir -p ${STAGE_PREFIX} && chown ${BOX_USER} ${STAGE_PREFIX}${options.extraCa ? ` && ${CA_BUNDLE_SCRIPT}` : ''}`,
    ),
    `USER ${BOX_USER}`,
    'ENV HOME=/tmp',
    runLine(install, NO_NEW_PRIVS),
    '',
  ].join('\n');
}

/**
 * `ca-sbx:_claude-code-<version>-<12 hex>` (the node base image's id and the npm registry are in
 * the key): in the cache repository, so `prune --images` removes it; no repo's tag starts with `_`.
 */
export function claudeImageTag(nodeBaseImageId: string, registries: Registries): string {
  const key = createHash('sha256')
    .update(`${nodeBaseImageId}\n${registries.npm ?? ''}\n${CLAUDE_CODE_VERSION}`)
    .digest('hex')
    .slice(0, 12);
  return `${CACHE_IMAGE_REPOSITORY}:_claude-code-${CLAUDE_CODE_VERSION}-${key}`;
}

export interface ClaudeImageInput {
  nodeBaseImage: string;
  nodeBaseImageId: string;
  registries: Registries;
  caCertificates?: string;
  limits: BuildLimits;
  timeoutMs: number;
  /** Opens the gateway for this build (the npm registry, or its mirror, and nothing else). */
  egress?: () => Promise<{ network: string; proxyUrl: string }>;
  log: (line: string) => void;
  signal?: AbortSignal;
  /** The sandbox whose create builds it (prepare option sandboxId). */
  sandboxId?: string;
}

/**
 * The image that holds Claude Code's binary, built once per version, node base and npm registry
 * (then reused by every repo's deps image, which copies the binary alone). Returns its tag.
 */
export async function ensureClaudeImage(input: ClaudeImageInput): Promise<string> {
  const image = claudeImageTag(input.nodeBaseImageId, input.registries);
  if (await engine.image.exists(image)) {
    input.log(`Claude Code ${CLAUDE_CODE_VERSION}: cached image ${image}`);
    // A deps build is about to copy from it: noted, so no other create's eviction takes it now.
    await noteCacheUse(image);
    return image;
  }
  const context = await mkdtemp(buildDirPrefix());
  const buildId = randomBytes(12).toString('hex');
  try {
    const caFile = resolveCaCertificates(input.caCertificates);
    if (caFile) await writeFile(join(context, CONTEXT_EXTRA_CA), readExtraCa(caFile), { mode: 0o644 });
    const dockerfile = join(context, 'Dockerfile');
    await writeFile(
      dockerfile,
      renderClaudeDockerfile(input.nodeBaseImage, {
        extraCa: Boolean(caFile),
        buildId,
        registries: input.registries,
        ...(input.sandboxId ? { sandboxId: input.sandboxId } : {}),
      }),
      { mode: 0o644 },
    );
    const egress = input.egress ? await input.egress() : undefined;
    const argv = buildArgv({
      image,
      network: egress?.network ?? 'bridge',
      labels: {
        [CACHE_LABEL]: '1',
        [LABEL_CLAUDE_CODE]: CLAUDE_CODE_VERSION,
        ...(input.sandboxId ? UNOWNED_IMAGE_LABELS : {}),
      },
      dockerfile,
      context,
      limits: input.limits,
      ...(egress ? { proxyUrl: egress.proxyUrl } : {}),
    });
    input.log(
      `docker build ${image} (Claude Code ${CLAUDE_CODE_VERSION}, network ${egress?.network ?? 'bridge'})`,
    );
    await runQuietBuild({
      argv,
      image,
      timeoutMs: input.timeoutMs,
      memory: input.limits.memory,
      ...(input.signal ? { signal: input.signal } : {}),
      cleanup: () => removeClaudeBuild(buildId, image),
    });
    return image;
  } finally {
    await rm(context, { recursive: true, force: true });
  }
}

/** A failed build's images (intermediate ones carry the build id) and the tag, if it was made. */
async function removeClaudeBuild(buildId: string, image: string): Promise<void> {
  // Best effort: what cannot be removed now is a build leftover for `prune --images`.
  const remove = (ref: string) => engine.image.remove(ref, { force: true }).catch(() => false);
  await remove(image);
  const listed = await engine.image
    .list({ all: true, labels: [`${LABEL_BUILD_ID}=${buildId}`] })
    .catch(() => []);
  for (const { id } of listed) await remove(id);
}
