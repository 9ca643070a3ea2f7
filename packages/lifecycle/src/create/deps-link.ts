import { type LinkResult, linkDependencies, type PreparedImage } from '@ca-sandbox/build';
import { depsSourceIn, hasRepoView } from '@ca-sandbox/docker';
import { DEPS_SRC, RAW_REPO_DIR, REPO_DIR } from '@ca-sandbox/docker/contracts';
import type { RunningContainer } from '@ca-sandbox/run';
import type { CreateContext } from './context.js';

/**
 * The box's node_modules: real directories in the volume linking to the baked deps. It runs in
 * the box (the helper has no /deps), before create returns and anything of the repo runs there.
 * `ahead`: the link the box started beside the clone already made (speculate.ts).
 */
export async function linkNodeModules(
  ctx: CreateContext,
  box: RunningContainer,
  prepared: PreparedImage,
  ahead?: Promise<LinkResult | undefined>,
): Promise<void> {
  ctx.checkAborted();
  if (hasRepoView(box.inspect)) {
    // The install's node_modules are under the checkout already: only the lockfiles are compared,
    // by the image's label when its build recorded them (the dephash covers the repo's lockfile
    // bytes, so the image's verdict is this checkout's), else by a node run in the box (~100 ms).
    const changed =
      prepared.changedLocks ??
      (await linkDependencies(box.name, prepared, { root: RAW_REPO_DIR, checkOnly: true })).changedLocks;
    ctx.log(`node_modules: real folders under ${REPO_DIR} (the repo view: the install under the checkout)`);
    noteChangedLocks(ctx, changed);
    return;
  }
  const depsSrc = depsSourceIn(box.inspect);
  const link = (await ahead) ?? (await linkDependencies(box.name, prepared, { depsSrc }));
  if (link.linked)
    ctx.log(
      `node_modules: ${link.dirs?.length ?? 0} folder(s) in ${REPO_DIR} linking ${link.entries ?? 0} entries to the deps in ${depsSrc}`,
    );
  if (link.copied?.length)
    ctx.log(
      `node_modules: copies in ${REPO_DIR}, as these packages write into their own folder: ${link.copied.slice(0, 5).join(', ')}`,
    );
  if (link.kept?.length)
    ctx.log(`node_modules the repo has itself were kept: ${link.kept.slice(0, 5).join(', ')}`);
  noteChangedLocks(ctx, link.changedLocks);
}

function noteChangedLocks(ctx: CreateContext, locks: readonly string[] = []): void {
  for (const lock of locks)
    ctx.progress.notice(
      `the dependency install changed ${lock} (the repo's did not match its manifests): the box has the repo's copy, so the package manager there may want to install again; the installed one is ${DEPS_SRC}/${lock}`,
    );
}
