import { isDeepStrictEqual } from 'node:util';
import {
  type CacheSource,
  type LastDepsImage,
  type LinkResult,
  lastDepsImage,
  linkDependencies,
  type PreparedImage,
  rememberDepsImage,
} from '@ca-sandbox/build';
import {
  BOX_USER,
  DockerCommandError,
  depsSourceIn,
  engine,
  hasRepoView,
  REPO_DIR,
} from '@ca-sandbox/docker';
import { type RunningContainer, StartCancelledError } from '@ca-sandbox/run';
import type { EgressSummaryRow } from '../egress.js';
import { redactUserinfo } from '../source.js';
import { boxRecordLabels, startBox } from './box.js';
import type { CreateContext } from './context.js';

/** The cache's name for the create's source (prepareBoxImage passes the same to prepareImage). */
export function cacheSource(ctx: CreateContext): CacheSource {
  const identity = ctx.source.identity;
  return { repoName: ctx.source.repoName, source: identity, imageSource: redactUserinfo(identity) };
}

/**
 * Whether a create may start its box beside the clone: a local source (a URL clone's egress rows
 * go on the box as a label, known only after the clone), a box on no network (offline,
 * clone-then-cut: an allowlist box waits for its firewall rules or gateway) and no Claude Code
 * (its image is another cache entry).
 */
function mayStartEarly(ctx: CreateContext): boolean {
  const { options } = ctx;
  const policy = options.policy === 'offline' || options.policy === 'clone-then-cut';
  return ctx.source.kind === 'local' && policy && !options.withClaude;
}

/**
 * Whether a box of `prepared` would get a repo view (box.ts repoView): its upper is the volume the
 * clone writes, which nothing may write while a view of it is mounted, so such a box is created
 * beside the clone but starts (mounts its views) only once the checkout is written, beside the
 * manifest read, the dephash and the cache lookup. Its view mount takes nothing from the image
 * (nocopy), so the create mounts nothing.
 */
function viewsRepo(ctx: CreateContext, prepared: PreparedImage): boolean {
  return (
    ctx.options.depsView === 'overlay' &&
    prepared.depsInstalled &&
    prepared.linkNodeModules &&
    ctx.runtime !== 'runsc'
  );
}

interface EarlyBox {
  guess: LastDepsImage;
  box: RunningContainer;
  labels: Record<string, string>;
}

/**
 * The box started beside the clone, from the deps image the last create of this source got (its
 * `-last` tag: one image inspect, no host-side cache, nothing of the repo read on the host). Kept
 * only when the helper's dephash then selects that very image, by tag and by id, with the same
 * labels; otherwise it is removed and the box starts as it always did. A cold create (no such
 * image) runs exactly as before.
 *
 * Why the box may share the volume while the helper writes the checkout: nothing of the repo or
 * its deps runs in it before create returns. Its PID 1 is docker-init (the engine's), whose one
 * child is KEEP_ALIVE, `/bin/sleep` by absolute path (never the image's PATH, which starts with
 * /deps bins the install wrote); the install ran as 1000 after the prep step stripped every
 * setuid/setgid bit, so it could write only under /deps, its /tmp and /work/repo (the step
 * empties both before it ends: the engine copies an image's /work/repo into the new, empty volume
 * this box mounts first), never /bin, /etc/ld.so.preload or the image's config (ENTRYPOINT, ENV:
 * the Dockerfile is ours). The isolation gate only inspects.
 *
 * The node_modules link starts in this box once it passed its gate and waits, its node blocked on
 * its stdin, until the host says the checkout is written (LinkOptions.after in @ca-sandbox/build);
 * it then runs beside the manifest read and the dephash, with `env -i`, the system PATH and the
 * base's node, exactly as on the sequential path. It writes only what it reports (the node_modules folders it made,
 * yarn's install-state copy): when the dephash then names another image, the box removes exactly
 * those before it goes, so the next box links into the checkout as the clone left it. Nothing it
 * writes is read by the manifest read going on beside it: that read prunes every node_modules,
 * and yarn's install state is no manifest (build's manifest-names.ts).
 */
export class SpeculativeBox {
  private readonly guess: Promise<LastDepsImage | undefined>;
  private started: Promise<EarlyBox | undefined> = Promise.resolve(undefined);
  private removal: Promise<unknown> | undefined;
  /** The node_modules link started in the early box, run once the checkout is written. */
  private linking: Promise<LinkResult | undefined> = Promise.resolve(undefined);
  /** Set once the box is not wanted any more: nothing starts after that. */
  private settled = false;

  constructor(private readonly ctx: CreateContext) {
    this.guess = mayStartEarly(ctx)
      ? ctx.beside(lastDepsImage(cacheSource(ctx))).catch(() => undefined)
      : Promise.resolve(undefined);
  }

  /**
   * After a create that may start early: the source's `-last` tag goes to the image its box got
   * (no engine call when it named it already). Never fails the create.
   */
  async remember(prepared: PreparedImage): Promise<void> {
    if (!mayStartEarly(this.ctx)) return;
    const known = (await this.guess)?.id;
    await rememberDepsImage(cacheSource(this.ctx), prepared, known).catch((error: Error) =>
      this.ctx.log(`the source's last deps image was not recorded: ${error.message}`),
    );
  }

  /** Whether the source has a last deps image to start from (a cache hit is then likely). */
  async likelyHit(): Promise<boolean> {
    return (await this.guess) !== undefined;
  }

  /**
   * Called once the volume exists (a box started before would get one the engine makes). The box's
   * node_modules link starts as soon as the box passed its gate, and waits for ctx.checkoutWritten;
   * its result is the create's when the box is kept (adoptedLink), undone when it is not (discard).
   */
  start(): void {
    this.started = this.ctx.beside(this.guess.then((guess) => (guess ? this.run(guess) : undefined)));
    this.linking = this.ctx.beside(
      this.started.then((early) => {
        // A repo view has the install's node_modules under the checkout: nothing to link.
        if (!early || hasRepoView(early.box.inspect)) return undefined;
        if (this.settled) {
          // The dephash came before the box passed its gate: a kept box links after it, as a box
          // started then would; one removed has nothing to undo.
          this.ctx.log(
            'early box: no link beside the clone, the dephash came before the box passed its gate',
          );
          return undefined;
        }
        return linkDependencies(early.box.name, early.guess.prepared, {
          // The link's 120 s start at the word: the wait for the checkout is the clone's.
          after: this.ctx.checkoutWritten,
          depsSrc: depsSourceIn(early.box.inspect),
        });
      }),
    );
  }

  private async run(guess: LastDepsImage): Promise<EarlyBox | undefined> {
    if (this.settled) return undefined;
    // A box with a repo view mounts the volume the clone writes as the view's upper: it is made
    // beside the clone (its views, the container) and started only once the checkout is written.
    const startAfter = viewsRepo(this.ctx, guess.prepared)
      ? this.ctx.checkoutWritten.then((written) => written && !this.settled)
      : undefined;
    const labels = boxRecordLabels(this.ctx, guess.prepared, []);
    try {
      const box = await startBox(this.ctx, guess.prepared, [], () => {}, startAfter);
      this.ctx.log(
        `early box: started beside the clone from ${guess.prepared.image}, this source's last deps image`,
      );
      return { guess, box, labels };
    } catch (error) {
      // The checkout never came (a failed clone) or the box is not wanted any more.
      if (error instanceof StartCancelledError) return undefined;
      // Not fatal: the box then starts after the dephash, where a failure is the create's.
      this.ctx.log(`early box start failed: ${(error as Error).message}`);
      return undefined;
    }
  }

  /** The link made by the kept early box (after adopt returned it). */
  adoptedLink(): Promise<LinkResult | undefined> {
    return this.linking;
  }

  /** The helper's dephash names `image`: a box of another image is removed at once, beside the build. */
  dephashKnown(image: string): void {
    void this.guess.then((guess) => {
      if (guess && guess.prepared.image !== image) this.discard();
    });
  }

  private discard(): Promise<unknown> {
    this.settled = true;
    this.removal ??= this.ctx.beside(
      this.started.then(async (early) => {
        if (!early) return;
        await this.unlink(early);
        await engine.container.remove(early.box.name, { force: true });
        this.ctx.log(
          `early box removed: it ran ${early.guess.prepared.image}, not the box this checkout gets`,
        );
      }),
    );
    return this.removal;
  }

  /**
   * The box to hand out, when the one started early runs exactly what the sequential path would
   * start (phase 'run' done, 'verify' started); else undefined, with the early box gone.
   */
  async adopt(prepared: PreparedImage, egress: EgressSummaryRow[]): Promise<RunningContainer | undefined> {
    this.settled = true;
    const early = await this.started;
    if (early && !this.removal && (await this.keeps(early, prepared, egress))) {
      this.ctx.log(`early box kept: the checkout's deps image is ${prepared.image}`);
      this.ctx.progress.done(`${early.box.name} (started beside the clone)`);
      this.ctx.progress.start('verify');
      return early.box;
    }
    await this.discard();
    return undefined;
  }

  /** What the early link wrote in the volume (repo-relative); it throws what the link threw. */
  private async linkMade(): Promise<string[]> {
    const link = await this.linking;
    return [...(link?.dirs ?? []), ...(link?.made ?? [])];
  }

  /**
   * Removes what the early link made in the volume, in the box that made it. A link that failed may
   * have made part of what it would report: the create fails rather than hand out a checkout
   * with another image's links in it.
   */
  private async unlink(early: EarlyBox): Promise<void> {
    const made = await this.linkMade();
    if (made.length === 0) return;
    // Repo-relative paths the link printed: never absolute, never a `..` step out of the checkout.
    const paths = made.filter((rel) => rel !== '' && !rel.startsWith('/') && !rel.split('/').includes('..'));
    const removed = await engine.exec.internal(
      early.box.name,
      ['/bin/rm', '-rf', '--', ...paths.map((rel) => `${REPO_DIR}/${rel}`)],
      { user: BOX_USER, timeoutMs: 60_000 },
    );
    if (removed.exitCode !== 0) throw new DockerCommandError(['exec'], removed.exitCode, removed.stderr);
    this.ctx.log(`early box: its node_modules links are removed (${paths.length} path(s))`);
  }

  private async keeps(early: EarlyBox, prepared: PreparedImage, egress: EgressSummaryRow[]) {
    if (!prepared.cacheHit || prepared.image !== early.guess.prepared.image) return false;
    // The guess links by the image's provider label; a root the dephash chose node for by its
    // source files links nothing (no install: no /deps node_modules). Whatever the early link
    // made must be what this box gets.
    if (!prepared.linkNodeModules && (await this.linkMade()).length > 0) return false;
    // A repo view only where the sequential path would make one (its lower is this image's).
    if (hasRepoView(early.box.inspect) && !viewsRepo(this.ctx, prepared)) return false;
    // What decides the box's environment besides the policy (boxEnv): empty on no network anyway.
    if (prepared.trustedCa !== early.guess.prepared.trustedCa) return false;
    if (!isDeepStrictEqual(boxRecordLabels(this.ctx, prepared, egress), early.labels)) return false;
    // The tag may have moved since the box started: the image it runs must be the one it names now.
    const now = await engine.image.inspect(prepared.image);
    return now?.Id === early.guess.id && early.box.inspect.Image === early.guess.id;
  }
}
