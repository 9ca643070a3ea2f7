import {
  describeInstallFallback,
  ImageBuildError,
  type PreparedImage,
  prepareImage,
} from '@ca-sandbox/build';
import { sanitizeName } from '@ca-sandbox/docker/contracts';
import { claudeInstallEgressRules, installEgressRules } from '@ca-sandbox/network';
import { GATEWAY_REFUSED } from '../egress.js';
import { redactUserinfo } from '../source.js';
import type { CreateContext } from './context.js';
import { gatewaySide } from './egress-summary.js';
import { checkRegistryTrust } from './registry-trust.js';

/**
 * The box's image (phases 'dephash', then 'build'): the deps image of the repo's manifests, from
 * the cache or installed in the helper, the install reaching only its registries via the gateway.
 */
export async function prepareBoxImage(
  ctx: CreateContext,
  onDephash: (image: string) => void = () => {},
): Promise<PreparedImage> {
  const { options, progress } = ctx;
  progress.start('dephash');
  const prepared = await prepareImage({
    containerId: ctx.names.helper,
    // The install's step containers carry the sandbox's labels: destroy and prune stop a killed one.
    sandboxId: ctx.id,
    ...(ctx.manifests ? { manifests: ctx.manifests } : {}),
    repoName: ctx.source.repoName,
    // The cache key holds the source's identity: another source with the same name and
    // manifests never gets this source's deps image (nor this one theirs).
    source: ctx.source.identity,
    sourceDisplay: redactUserinfo(ctx.source.identity),
    policy: options.policy,
    builder: options.builder,
    ...(options.baseImage ? { baseImage: options.baseImage } : {}),
    ...(options.maxDepsSize ? { maxDepsSize: options.maxDepsSize } : {}),
    ...(options.withClaude
      ? {
          withClaude: true,
          // Claude Code's own image: the npm registry (or its mirror) and nothing else.
          claudeEgress: async () => {
            const gateway = await ctx.egress.open(
              'claude-code',
              claudeInstallEgressRules(options.installDestinations),
            );
            return { network: gateway.network, proxyUrl: gateway.proxyUrl };
          },
        }
      : {}),
    ...(ctx.hooks.signal ? { signal: ctx.hooks.signal } : {}),
    // The install reaches its provider's registries (and configured mirrors) through the gateway.
    egress: async (provider) => {
      const gateway = await ctx.egress.open(
        'install',
        installEgressRules(provider, options.installDestinations),
      );
      // Beside the install: its registry's certificate, checked as the install will see it.
      ctx.beside(checkRegistryTrust(ctx, gateway, provider));
      return { network: gateway.network, proxyUrl: gateway.proxyUrl };
    },
    onLog: (line) => ctx.log(line),
    onEvent: (event) => {
      if (event.type === 'dephash') {
        progress.done(event.dephash);
        onDephash(event.image);
        progress.start('build', event.image);
      }
    },
  }).catch(async (error: unknown) => {
    throw error instanceof ImageBuildError ? await withGatewaySide(ctx, error) : error;
  });
  const image = prepared.cacheHit ? `cache hit ${prepared.image}` : prepared.image;
  // The notes belong to this phase: logged before its end, not under the next phase's spinner.
  for (const note of prepared.notes) ctx.log(note);
  for (const mismatch of prepared.runtimeMismatches) progress.notice(mismatch);
  for (const fallback of prepared.installFallbacks) progress.notice(describeInstallFallback(fallback));
  if (prepared.skippedScripts.length > 0) progress.notice(skippedScriptsNotice(prepared.skippedScripts));
  progress.done(prepared.selection ? `${image} (${prepared.selection})` : image);
  ctx.checkAborted();
  return prepared;
}

/**
 * A failed install with what the gateway refused or could not reach (a git dependency on
 * github.com, a tarball URL), and for a refusal the setting that allows a destination.
 */
async function withGatewaySide(ctx: CreateContext, error: ImageBuildError): Promise<ImageBuildError> {
  const why = await gatewaySide(ctx, 'install');
  if (!why) return error;
  const refused = why.includes(GATEWAY_REFUSED)
    ? '; the install reaches its registries and configured mirrors only: the install.allow setting (CA_SANDBOX_INSTALL_ALLOW) adds a destination'
    : '';
  error.message = `${error.message} (egress gateway: ${why}${refused})`;
  return error;
}

/**
 * The repo's own lifecycle scripts (its `prepare` that builds `dist`, say) run in the box only,
 * never in the shared install: tests that import what they make fail until the user runs them.
 * Entries are the repo's paths and script names: shown sanitised, the first few.
 */
export function skippedScriptsNotice(skipped: readonly string[]): string {
  const shown = skipped.slice(0, 3).map((entry) => sanitizeName(entry, 120));
  const more = skipped.length > shown.length ? `, ${skipped.length - shown.length} more` : '';
  return `the install did not run the repo's own lifecycle scripts (${shown.join('; ')}${more}): run them in the box if its tests need what they make`;
}
