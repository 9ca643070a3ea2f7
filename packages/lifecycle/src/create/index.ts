import { clearCreating, markCreating } from '../create-marker.js';
import { readCredential } from '../credentials.js';
import { CreateAbortedError, CreateCleanupError } from '../errors.js';
import { recordGate } from '../gate-log.js';
import { type CreateOptions, generateSandboxId, resolveCreateOptions } from '../options.js';
import { recordFromInspect, type SandboxRecord } from '../record.js';
import { parseSource } from '../source.js';
import { holdViewVolumes, startBox } from './box.js';
import { keepImageCacheBounded, noteImageUse } from './cache.js';
import { cleanupFailedCreate } from './cleanup.js';
import { cloneSource } from './clone.js';
import { CreateContext } from './context.js';
import { linkNodeModules } from './deps-link.js';
import { summariseEgress } from './egress-summary.js';
import { prepareBoxImage } from './image.js';
import { preflight } from './preflight.js';
import type { CreateHooks } from './progress.js';
import { SpeculativeBox } from './speculate.js';
import { removeHelper } from './workspace.js';

export { cleanupCreate } from './cleanup.js';
export type { CreateHooks, CreatePhase, PhaseEvent } from './progress.js';
export type { CreateOptions };

/**
 * preflight → clone → dephash → build → run → verify, the box started beside the clone (and its
 * node_modules linked beside the dephash) when the source's last deps image is a likely hit
 * (speculate.ts, which says why that is safe). The source is validated before anything
 * runs; git and the install run only in a hardened helper container; the box is handed out only
 * after the isolation gate passed; every object is labeled with this call's instance, and any
 * failure or abort removes everything this call created before the error is thrown.
 */
export async function createSandbox(options: CreateOptions, hooks: CreateHooks = {}): Promise<SandboxRecord> {
  const resolved = resolveCreateOptions(options);
  const source = await parseSource(resolved.source);
  const id = resolved.id || generateSandboxId(source.repoName);
  const ctx = new CreateContext(id, resolved, source, hooks);
  // A missing variable or unreadable file is a usage error before anything is made.
  ctx.credentials = resolved.credentials.map((spec) => readCredential(spec));
  const { progress } = ctx;
  // Before the first engine object: a create killed from here on is found by `destroy <id>`.
  const marked = markCreating(id, ctx.instance);
  try {
    await progress.phase('preflight', async () => {
      const detail = await preflight(ctx);
      await marked;
      return detail;
    });
    // The box may start beside the clone, from the deps image this source got last (speculate.ts).
    const early = new SpeculativeBox(ctx);
    // The reads started beside the clone wait for the checkout; a failed clone lets them go.
    await progress
      .phase('clone', () => cloneSource(ctx, early))
      .then(
        () => ctx.checkoutDone(true),
        (error: unknown) => {
          ctx.checkoutDone(false);
          throw error;
        },
      );
    // The helper goes as soon as the dephash is known: its last use is the manifest read (a deps
    // build runs in a container of its own), and nothing of the box depends on it, while a
    // container removal costs the engine about 100 ms. It sits on the gateway's internal network,
    // so it goes first, then the gateway. A box that uses a gateway gets a new one once the
    // create's is gone, so it waits for both.
    let helperRemoval: Promise<void> | undefined;
    const removeHelperOnce = () => {
      if (!helperRemoval) {
        ctx.stopHeartbeat();
        // The clone's listing runs in the helper beside the manifest read: it goes once that is done.
        helperRemoval = ctx.beside(Promise.resolve(ctx.cloneListing).then(() => removeHelper(id)));
      }
      return helperRemoval;
    };
    const prepared = await prepareBoxImage(ctx, (image) => {
      early.dephashKnown(image);
      removeHelperOnce();
    });
    const helperGone = removeHelperOnce();
    await noteImageUse(prepared);
    const egress = await summariseEgress(ctx);
    const closing = ctx.boxUsesGateway()
      ? Promise.resolve()
      : ctx.beside(helperGone.then(() => ctx.egress.close()));
    if (ctx.boxUsesGateway()) await helperGone;
    ctx.checkAborted();
    progress.start('run');
    const adopted = await early.adopt(prepared, egress);
    const box = adopted ?? (await startBox(ctx, prepared, egress));
    progress.done(`${box.report.checks.filter((check) => check.pass).length} isolation checks passed`);
    // The node_modules link and the source's last deps image go while the helper and the
    // create's gateway are removed: none of them touches the others.
    await Promise.all([
      linkNodeModules(ctx, box, prepared, adopted ? early.adoptedLink() : undefined),
      early.remember(prepared),
      keepImageCacheBounded(ctx, prepared),
      recordGate(id, 'create', box.report),
      holdViewVolumes(ctx, box.inspect, prepared),
      helperGone,
      closing,
    ]);
    return recordFromInspect(box.inspect);
  } catch (error) {
    progress.fail(error);
    const leftovers = await cleanupFailedCreate(ctx);
    const failure = hooks.signal?.aborted ? new CreateAbortedError() : error;
    if (leftovers.length > 0) throw new CreateCleanupError(id, failure, leftovers);
    throw failure;
  } finally {
    await marked;
    await clearCreating(id, ctx.instance);
  }
}
