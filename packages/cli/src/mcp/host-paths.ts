import { lstat, mkdir, realpath } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CaSandboxError, sanitizeName } from '@ca-sandbox/docker/contracts';

/** A host path the MCP server may not read or write (issue 9.9): a usage error naming the root. */
export class HostPathRefusedError extends CaSandboxError {
  readonly kind = 'usage';
  readonly code = 'HOST_PATH_REFUSED';
  constructor(message: string, hint?: string) {
    super(message, { hint });
  }
}

/** `path` is `root` or below it (both already real, absolute paths). */
export function isWithin(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel));
}

/** Real paths of the roots that exist (a root that does not exist allows nothing). */
export async function realRoots(roots: readonly string[]): Promise<string[]> {
  const real = await Promise.all(roots.map((root) => realpath(root).catch(() => undefined)));
  return [...new Set(real.filter((root): root is string => root !== undefined))];
}

/** Directories named by the client's MCP roots (file: URIs only). */
export function rootsFromUris(uris: readonly string[]): string[] {
  const paths: string[] = [];
  for (const uri of uris) {
    try {
      if (uri.startsWith('file:')) paths.push(fileURLToPath(uri));
    } catch {
      // not a local file URI: allows nothing
    }
  }
  return paths;
}

const show = (path: string) => sanitizeName(path);

/**
 * The real path of a local source directory, when it lies under one of the allowed roots
 * (symlinks resolved first, so a link inside a root that points outside is refused).
 */
export async function checkReadPath(
  path: string,
  roots: readonly string[],
  whereRootsCome: string,
): Promise<string> {
  const allowed = await realRoots(roots);
  if (allowed.length === 0)
    throw new HostPathRefusedError(
      `local source ${show(path)} refused: no allowed roots (${whereRootsCome})`,
      'give a git URL, or allow a directory: the client’s MCP roots, mcp.roots in the configuration file, or CA_SANDBOX_MCP_ROOTS',
    );
  const real = await realpath(path).catch(() => undefined);
  if (real === undefined) throw new HostPathRefusedError(`local source ${show(path)} does not exist`);
  if (!allowed.some((root) => isWithin(root, real)))
    throw new HostPathRefusedError(
      `local source ${show(path)}${real === path ? '' : ` (really ${show(real)})`} is outside the allowed roots: ${allowed.map(show).join(', ')}`,
      'sources are read only under the client’s MCP roots, mcp.roots in the configuration file, or CA_SANDBOX_MCP_ROOTS',
    );
  return real;
}

/** The real path of the deepest existing ancestor of `path`, with the rest appended. */
async function realButMissing(path: string): Promise<string> {
  const rest: string[] = [];
  let current = path;
  for (;;) {
    const real = await realpath(current).catch(() => undefined);
    if (real !== undefined) return join(real, ...rest.reverse());
    const parent = dirname(current);
    if (parent === current) return path;
    rest.push(basename(current));
    current = parent;
  }
}

/**
 * Where a copy out of a box may land: under the output root only. A relative destination is
 * taken relative to the root (created, private, when missing). The parent is resolved through
 * symlinks before the check; a destination that is itself a symlink must point inside the root.
 * Returns the path to hand to cpOut.
 */
export async function checkWritePath(destination: string, outputRoot: string): Promise<string> {
  await mkdir(outputRoot, { recursive: true, mode: 0o700 });
  const root = await realpath(outputRoot);
  const wanted = resolve(root, destination);
  const refuse = (really?: string) =>
    new HostPathRefusedError(
      `destination ${show(destination)}${really ? ` (really ${show(really)})` : ''} is outside the output root ${show(root)}`,
      'the MCP server writes only under mcp.outputRoot of the configuration file (ca-sandbox config); give a path relative to it',
    );
  const realWanted = await realButMissing(wanted);
  if (realWanted === root) return root;
  const parent = await realButMissing(dirname(wanted));
  if (!isWithin(root, parent)) throw refuse(parent === dirname(wanted) ? undefined : parent);
  const target = join(parent, basename(wanted));
  const stats = await lstat(target).catch(() => undefined);
  if (stats?.isSymbolicLink() && !isWithin(root, realWanted)) throw refuse(realWanted);
  return target;
}
