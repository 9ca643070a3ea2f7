import { type LinkResult, linkDependencies, type PreparedImage } from '@ca-sandbox/build';
import { depsSourceIn } from '@ca-sandbox/docker';
import { DEPS_SRC, REPO_DIR } from '@ca-sandbox/docker/contracts';
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
  for (const lock of link.changedLocks ?? [])
    ctx.progress.notice(
      `the dependency install changed ${lock} (the repo's did not match its manifests): the box has the repo's copy, so the package manager there may want to install again; the installed one is ${DEPS_SRC}/${lock}`,
    );
}
