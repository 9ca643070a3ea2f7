import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { BOX_USER, ENV_NAME_PATTERN } from '@ca-sandbox/docker';
import { hasControlCharacter, InvariantError } from '@ca-sandbox/docker/contracts';
import tar from 'tar-stream';
import type { EnvEntry } from './recipe.js';

/**
 * What a pre-install image's build gave the install container (the Dockerfile's COPY of the
 * manifests and its ENV lines), given without a build: the container is made from the prep image
 * itself, with these variables, and the manifests are put into it before it starts. The commit
 * then holds both, as the image's build did.
 */

/** `$NAME` or `${NAME}`: the only substitutions a recipe's values use (a PATH on top of the image's). */
const SUBSTITUTION = /\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))/g;

/**
 * The recipe's variables as `NAME=value`, in order, each `expand` one with `$NAME` and `${NAME}`
 * replaced by the value set so far (the image's own, then the entries before it: what a Dockerfile
 * ENV per entry gives; an unset name is empty), the others literal. Any other `$` form in an
 * expanded value is refused rather than read differently from docker. A name set twice keeps its
 * first place and its last value.
 */
export function installEnv(imageEnv: readonly string[], entries: readonly EnvEntry[]): string[] {
  const values = new Map<string, string>();
  for (const entry of imageEnv) {
    const at = entry.indexOf('=');
    if (at > 0) values.set(entry.slice(0, at), entry.slice(at + 1));
  }
  const set = new Map<string, string>();
  for (const entry of entries) {
    if (!ENV_NAME_PATTERN.test(entry.name))
      throw new InvariantError(`invalid env name ${JSON.stringify(entry.name)}`);
    if (hasControlCharacter(entry.value))
      throw new InvariantError(`env ${entry.name} has a control character`);
    let value = entry.value;
    if (entry.expand) {
      const rest = value.replace(SUBSTITUTION, '');
      if (rest.includes('$') || rest.includes('\\'))
        throw new InvariantError(`env ${entry.name}: only $NAME and \${NAME} are substituted`);
      value = value.replace(
        SUBSTITUTION,
        (_, braced?: string, bare?: string) => values.get(braced ?? bare ?? '') ?? '',
      );
    }
    values.set(entry.name, value);
    set.set(entry.name, value);
  }
  return [...set].map(([name, value]) => `${name}=${value}`);
}

/**
 * The build context's manifests folder (writeManifests: our own fresh folder of regular files) as
 * a tar for the engine's archive API, put at /deps/src: every entry the box user's (what `COPY
 * --chown` gave), folders 0755, files 0644, paths relative. Links or anything else: refused.
 */
export async function manifestsArchive(dir: string): Promise<Buffer> {
  const [uid, gid] = BOX_USER.split(':').map(Number) as [number, number];
  const pack = tar.pack();
  const chunks: Buffer[] = [];
  pack.on('data', (chunk: unknown) => {
    chunks.push(chunk as Buffer);
  });
  const ended = new Promise<void>((resolve, reject) => {
    pack.on('end', resolve);
    pack.on('error', reject);
  });
  const mtime = new Date();
  const walk = async (relative: string): Promise<void> => {
    const entries = await readdir(join(dir, relative), { withFileTypes: true });
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      const name = relative ? `${relative}/${entry.name}` : entry.name;
      if (entry.isDirectory()) {
        pack.entry({ name, type: 'directory', mode: 0o755, uid, gid, mtime });
        await walk(name);
      } else if (entry.isFile()) {
        pack.entry({ name, type: 'file', mode: 0o644, uid, gid, mtime }, await readFile(join(dir, name)));
      } else
        throw new InvariantError(`not a file in the build context: ${JSON.stringify(name.slice(0, 100))}`);
    }
  };
  await walk('');
  pack.finalize();
  await ended;
  return Buffer.concat(chunks);
}
