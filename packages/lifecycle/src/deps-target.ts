import { DEPS_DIR, IMAGE_VIEW_DIR } from '@ca-sandbox/docker/contracts';

/**
 * Whether a link's target is a plain absolute path into the box's installed deps (/deps, or /deps
 * in the box's view of its image): what the deps link (build's node link) points node_modules at.
 * `/deps/../work/repo/.git/hooks` is not one: no `.` or `..` step anywhere.
 */
export function isDepsTarget(target: string): boolean {
  return (
    (target.startsWith(`${DEPS_DIR}/`) || target.startsWith(`${IMAGE_VIEW_DIR}${DEPS_DIR}/`)) &&
    !target.split('/').some((part) => part === '..' || part === '.')
  );
}

/**
 * The node_modules folder (path up to its last `node_modules` part) of a link at `path` that points
 * into the deps; undefined for any other link.
 */
export function depsLinkFolder(path: string, target: string): string | undefined {
  if (!isDepsTarget(target)) return undefined;
  const parts = path.split('/');
  const at = parts.lastIndexOf('node_modules');
  return at >= 0 && at < parts.length - 1 ? parts.slice(0, at + 1).join('/') : undefined;
}
