import { readExtraCa, resolveCaCertificates, startManifestRead } from '@ca-sandbox/build';
import { InvariantError } from '@ca-sandbox/docker/contracts';
import { checkoutVerdict, measureStep } from '../checkout-size.js';
import {
  buildLocalClonePlan,
  buildUrlClonePlan,
  type ClonePlan,
  type CloneStep,
  GIT_ENV,
  installCloneCa,
  localTreeInput,
  runCloneSteps,
  unpackStep,
} from '../clone-plan.js';
import { cloneRules, proxyEnv, relayEnv, relayInstallStep } from '../egress.js';
import { CloneFailedError, CreateAbortedError } from '../errors.js';
import { captureCloneListing } from '../file-listing.js';
import { localOrigin } from '../local-origin.js';
import { type DirectoryScan, scanDirectory } from '../pack-local.js';
import type { CreateContext } from './context.js';
import { gatewaySide } from './egress-summary.js';
import type { SpeculativeBox } from './speculate.js';
import { createOwnVolume, startHelper } from './workspace.js';

/**
 * The source into the volume: a local tree is scanned against the source caps on the host and sent
 * as a tar (a git repo then cloned --no-local from it), a URL is fetched in the helper through the
 * egress gateway. Either way the checkout is measured before a file of it is written.
 * `early`: the box started beside the clone (speculate.ts), once the volume exists.
 */
export async function cloneSource(ctx: CreateContext, early?: SpeculativeBox): Promise<string> {
  try {
    return await cloneInto(ctx, early);
  } catch (error) {
    throw error instanceof CloneFailedError ? withShortShaHint(error, ctx.options.ref) : error;
  }
}

/** 7 to 39 hex digits: what `git log --oneline` shows of a commit, never a full sha. */
const ABBREVIATED_SHA = /^[0-9a-f]{7,39}$/;

function looksAbbreviated(ref: CreateContext['options']['ref']): boolean {
  return ref !== undefined && !ref.commit && ABBREVIATED_SHA.test(ref.ref);
}

/** git's words for a ref the remote does not have (clone --branch, fetch of a ref). */
const REF_NOT_FOUND = /Remote branch \S+ not found|couldn't find remote ref/;

/**
 * `--ref 7106ce60`: a commit as `git log --oneline` shows it, which the clone takes for a branch
 * or tag (a fetch needs a commit's full name, and a branch of that name may exist), so git says
 * only "Remote branch 7106ce60 not found". The failure then says what --ref wants.
 */
export function withShortShaHint(
  error: CloneFailedError,
  ref: CreateContext['options']['ref'],
): CloneFailedError {
  // Only git's "no such ref": `--ref 20240115` may be a real tag that failed for another reason.
  if (!ref || !looksAbbreviated(ref) || !REF_NOT_FOUND.test(error.message)) return error;
  return new CloneFailedError(
    `${error.message} (--ref ${ref.ref} looks like an abbreviated commit: a commit is named by its full sha)`,
    {
      hint: `give the full sha: \`git rev-parse ${ref.ref}\` in a clone of the repository prints it (40 hex digits, 64 in a sha256 repository)`,
    },
  );
}

async function cloneInto(ctx: CreateContext, early?: SpeculativeBox): Promise<string> {
  const { source, options } = ctx;
  const scan = source.kind === 'local' ? await scanDirectory(source.path, options.sourceLimits) : undefined;
  ctx.checkAborted();
  // An install will need the gateway: start it while the local tree is copied (a URL clone
  // starts it anyway, for itself). Not when a cache hit is likely: the install then opens it.
  const likelyHit = (await early?.likelyHit()) ?? false;
  if (source.kind === 'local' && options.policy !== 'offline' && !likelyHit) ctx.egress.prestart();
  await createOwnVolume(ctx.id, ctx.labels);
  ctx.checkAborted();
  early?.start();
  // A URL clone reaches the repo's host through the gateway and nothing else (unless the caller
  // named a network of its own); a local source needs no network at all.
  const gateway =
    source.kind === 'url' && options.cloneNetwork === undefined
      ? await ctx.egress.open('clone', cloneRules(source))
      : undefined;
  let network = 'none';
  if (source.kind === 'url') network = gateway?.network ?? options.cloneNetwork ?? 'none';
  ctx.stopHeartbeat = await startHelper({
    id: ctx.id,
    image: options.helperImage,
    labels: ctx.labels,
    network,
    ...(gateway ? { env: proxyEnv(gateway) } : {}),
  });
  ctx.checkAborted();
  const limit = options.cloneTimeoutSeconds;
  const helper = ctx.names.helper;
  // The manifest read's exec starts now, beside the clone, and reads once the checkout is written
  // (an exec's start costs the engine about 70 ms; the read itself a few).
  ctx.manifests = ctx.beside(
    startManifestRead(helper, {
      // Its 120 s start at the word: the clone before it has limits of its own.
      after: ctx.checkoutWritten,
      ...(ctx.hooks.signal ? { signal: ctx.hooks.signal } : {}),
    }),
  );
  // The report's baseline of "what changed": what the checkout wrote, before anything of the repo ran.
  ctx.cloneListing = ctx.beside(
    captureCloneListing(helper, ctx.id, ctx.instance, {
      after: ctx.checkoutWritten,
      // A commit only for what git cloned: a plain copy's `.git` is the repo's to forge.
      withCommit: source.kind === 'url' || scan?.gitRepo === true,
      ...(ctx.hooks.signal ? { signal: ctx.hooks.signal } : {}),
    }).catch((error: unknown) =>
      ctx.log(
        `the clone's file listing failed (the report cannot say what changed): ${(error as Error).message}`,
      ),
    ),
  );
  if (source.kind === 'url') {
    // git:// and ssh read no proxy variable: they go through a CONNECT relay to the gateway.
    const relay = gateway && (source.scheme === 'git' || source.scheme === 'ssh');
    if (relay) await runCloneSteps(helper, [{ argv: relayInstallStep() }], limit, ctx.hooks.signal);
    const caFile = resolveCaCertificates();
    const caEnv = caFile ? await installCloneCa(helper, readExtraCa(caFile)) : {};
    // Internal commands start from an empty environment: the proxy is named on each step.
    const extraEnv = {
      ...caEnv,
      ...(gateway ? proxyEnv(gateway) : {}),
      ...(relay ? relayEnv(GIT_ENV.GIT_SSH_COMMAND ?? 'ssh') : {}),
    };
    try {
      await fetchMeasureCheckout(ctx, buildUrlClonePlan(source, options.ref, limit), extraEnv);
    } catch (error) {
      throw gateway && error instanceof CloneFailedError ? await withGatewaySide(ctx, error) : error;
    }
    await ctx.egress.collect();
    return source.display;
  }
  if (!scan) throw new InvariantError('unreachable: local source without a scan');
  // The tar goes in with the fetch and the measure, in one exec.
  const unpack = { steps: [unpackStep(scan)], input: localTreeInput(scan) };
  // A partial clone (--filter) lacks objects of its history, which the offline helper cannot
  // fetch: the box gets its branch's last commit alone (a shallow clone needs only that commit's
  // objects). A commit ref may lie deeper: that clone stays whole, and fails saying why.
  const shallow = scan.gitRepo && isPartialClone(scan) && !options.ref?.commit;
  if (scan.gitRepo) {
    const plan = buildLocalClonePlan(options.ref, limit, await localOrigin(scan), shallow);
    try {
      await fetchMeasureCheckout(ctx, plan, {}, unpack);
    } catch (error) {
      // An abbreviated commit fails as an unknown branch whatever the clone: cloneSource says so.
      const unknownRef =
        error instanceof CloneFailedError &&
        looksAbbreviated(options.ref) &&
        REF_NOT_FOUND.test(error.message);
      throw error instanceof CloneFailedError && isPartialClone(scan) && !unknownRef
        ? partialCloneError(error)
        : error;
    }
    if (shallow)
      ctx.progress.notice(
        'the repository is a partial clone (it has a .promisor pack: cloned with --filter, or copied from such a clone) whose history the helper cannot fetch offline: the box got a shallow clone, its last commit only',
      );
  } else await runCloneSteps(helper, unpack.steps, limit, ctx.hooks.signal, {}, unpack.input);
  ctx.log(`copied ${scan.entries.length} entries (${scan.bytes} bytes) from ${source.display}`);
  for (const skip of scan.skipped.slice(0, 20)) ctx.log(`skipped ${skip.path}: ${skip.reason}`);
  if (!scan.gitRepo) return `${source.display} (plain copy)`;
  return `${source.display} (git clone --no-local${shallow ? ' --depth 1' : ''})`;
}

/** `git clone --filter=…` leaves promisor packs: the objects it skipped are fetched on demand. */
function isPartialClone(scan: DirectoryScan): boolean {
  return scan.entries.some((entry) => /^\.git\/objects\/pack\/[^/]+\.promisor$/.test(entry.path));
}

/**
 * A partial clone lacks objects that git fetches from its remote when needed; the helper is
 * offline, so a clone that needs one fails with git's bare "pack-objects died". Say why.
 */
function partialCloneError(error: CloneFailedError): CloneFailedError {
  return new CloneFailedError(
    `${error.message} (the repository is a partial clone, with a .promisor pack: the objects it left out cannot be fetched in the offline helper)`,
    {
      hint: 'create from its URL instead, or from a clone with all its objects (a copy of a partial clone stays partial: clone its remote again without --filter)',
    },
  );
}

/** The clone's error with what the gateway decided about its requests, when it logged a failure. */
async function withGatewaySide(ctx: CreateContext, error: CloneFailedError): Promise<CloneFailedError> {
  const why = await gatewaySide(ctx, 'clone');
  return why ? new CloneFailedError(`${error.message} (egress gateway: ${why})`) : error;
}

/**
 * Fetch without a work tree, measure what the checkout would write against the source caps, then
 * check out: one exec, the checkout steps gated in the helper on the measure's verdict, so a tree
 * over the caps (CheckoutTooLargeError here) never has a file of it written. `before`: steps that
 * go first (the local tree's unpack, with its input).
 */
async function fetchMeasureCheckout(
  ctx: CreateContext,
  plan: ClonePlan,
  fetchEnv: Record<string, string> = {},
  before: { steps: CloneStep[]; input: NodeJS.ReadableStream } | undefined = undefined,
): Promise<void> {
  const limit = ctx.options.cloneTimeoutSeconds;
  const signal = ctx.hooks.signal;
  const helper = ctx.names.helper;
  const limits = ctx.options.sourceLimits;
  const steps = [
    ...(before?.steps ?? []),
    ...plan.fetch,
    measureStep(plan.revision, limits, limit),
    ...plan.checkout,
  ];
  const measured = await runCloneSteps(helper, steps, limit, signal, fetchEnv, before?.input);
  // A killed measure exits 0 with no verdict: an interrupted create must not read as a git failure.
  if (signal?.aborted) throw new CreateAbortedError();
  ctx.checkAborted();
  const size = checkoutVerdict(measured.stdout, measured.exitCode, measured.stderr, plan.revision, limits);
  ctx.log(
    size.empty
      ? 'the repository is empty: nothing to check out'
      : `checkout: ${size.entries} entries, ${size.bytes} bytes of files`,
  );
  const { count, named } = size.submodules;
  if (count > 0) {
    const more = count > named.length ? `, ${count - named.length} more` : '';
    ctx.progress.notice(
      `the repository has ${count} git submodule${count === 1 ? '' : 's'} (${named.join(', ')}${more}): ${count === 1 ? 'its folder is' : 'their folders are'} empty in the box (submodules are not cloned)`,
    );
  }
}
