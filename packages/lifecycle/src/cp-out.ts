import { lstat, mkdtemp, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join, posix, resolve } from 'node:path';
import { dockerSpawnError, spawnDocker } from '@ca-sandbox/docker';
import { z } from 'zod';
import { assertBoxRunning, BOX_WORKDIR, looksLikeMissingContainer, resolveBox } from './_utils.js';
import {
  CpOutDestinationError,
  CpOutSourceError,
  InvalidOptionsError,
  printable,
  UnsupportedHostError,
} from './errors.js';
import { captureCapped, decodeUtf8 } from './exec.js';
import { extractTar } from './extract.js';

export interface CpOutOptions {
  /** Replace an existing destination (never a symlink). */
  force?: boolean;
  /** Cap on bytes written. Default 1 GiB. */
  maxBytes?: number;
  /** Cap on tar entries. Default 100 000. */
  maxEntries?: number;
}

export interface CpOutResult {
  destination: string;
  files: number;
  directories: number;
  bytes: number;
  /** Entries not written (links leaving the tree, devices, FIFOs, bad names), with the reason. */
  skipped: { path: string; reason: string }[];
}

const CpOutOptionsSchema = z.strictObject({
  force: z.boolean().optional(),
  maxBytes: z.number().int().positive().optional(),
  maxEntries: z.number().int().positive().optional(),
});

/** Fills every default; InvalidOptionsError on anything else. */
export function resolveCpOutOptions(input: unknown = {}): Required<CpOutOptions> {
  const parsed = CpOutOptionsSchema.safeParse(input ?? {});
  if (!parsed.success)
    throw new InvalidOptionsError(`invalid copy options: ${parsed.error.issues[0]?.message}`);
  return { force: false, maxBytes: 1024 * 1024 * 1024, maxEntries: 100_000, ...parsed.data };
}

/** The absolute box path; relative paths resolve against /work/repo. */
export function resolveBoxPath(boxPath: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are refused
  if (typeof boxPath !== 'string' || boxPath === '' || /[\u0000-\u001f\u007f]/.test(boxPath)) {
    throw new CpOutSourceError('give a path inside the box without control characters');
  }
  const absolute = posix.resolve(BOX_WORKDIR, boxPath);
  if (absolute === '/') throw new CpOutSourceError('copy a file or directory, not the whole box');
  return absolute;
}

/**
 * Copies `boxPath` out of the sandbox to `hostDest`, the only way files leave a box. The tar
 * stream of `docker cp <box>:<path> -` is extracted by our own code (see extractTar) into a fresh
 * temp directory beside the destination, then renamed into place. An existing destination is
 * refused unless `force`; a destination that is a symlink is always refused.
 */
export async function cpOut(
  id: string,
  boxPath: string,
  hostDest: string,
  options: CpOutOptions = {},
): Promise<CpOutResult> {
  // The extractor's path checks are POSIX ones: on Windows `\\` and drive letters are separators too.
  if (process.platform === 'win32') {
    throw new UnsupportedHostError('copying out of a sandbox is not supported on windows hosts');
  }
  const { force, maxBytes, maxEntries } = resolveCpOutOptions(options);
  const source = resolveBoxPath(boxPath);
  // Only a box: a helper (or a stranger carrying the name) is refused before anything is copied.
  const container = await resolveBox(id);
  const destination = resolve(hostDest);
  await checkDestination(destination, force);
  const temp = await mkdtemp(join(dirname(destination), '.ca-sbx-cp-'));
  try {
    const top = posix.basename(source);
    const argv = ['cp', `${container}:${source}`, '-'];
    const child = spawnDocker(argv);
    const stderr = captureCapped(child.stderr, 64 * 1024);
    let summary: Awaited<ReturnType<typeof extractTar>>;
    try {
      if (!child.stdout) throw new CpOutSourceError('docker cp gave no output stream');
      summary = await extractTar(child.stdout, temp, top, { maxBytes, maxEntries });
    } catch (error) {
      child.kill('SIGKILL');
      await child.catch(() => undefined);
      throw error;
    }
    const result = await child;
    const errorText = decodeUtf8((await stderr).data);
    if (result.exitCode !== 0) {
      if (result.exitCode === undefined) throw dockerSpawnError(argv, undefined, errorText, result);
      if (looksLikeMissingContainer(errorText)) await assertBoxRunning(id);
      if (/Could not find the file|no such file or directory/i.test(errorText)) {
        throw new CpOutSourceError(`'${printable(source)}' does not exist in the sandbox`);
      }
      throw dockerSpawnError(argv, result.exitCode, errorText, result);
    }
    const copied = await lstat(join(temp, top)).catch(() => undefined);
    if (!copied) {
      const why = summary.skipped[0]?.reason ?? 'nothing was in the stream';
      throw new CpOutSourceError(`nothing copied from '${printable(source)}': ${why}`);
    }
    await checkDestination(destination, force);
    if (force) await rm(destination, { recursive: true, force: true });
    await rename(join(temp, top), destination);
    return {
      destination,
      files: summary.files,
      directories: summary.directories,
      bytes: summary.bytes,
      skipped: summary.skipped,
    };
  } finally {
    await rm(temp, { recursive: true, force: true });
  }
}

async function checkDestination(destination: string, force: boolean): Promise<void> {
  const parent = await stat(dirname(destination)).catch(() => undefined);
  if (!parent?.isDirectory()) {
    throw new CpOutDestinationError(
      `the destination's parent '${printable(dirname(destination))}' is not a directory`,
    );
  }
  const existing = await lstat(destination).catch(() => undefined);
  if (!existing) return;
  if (existing.isSymbolicLink()) {
    throw new CpOutDestinationError(
      `the destination '${printable(destination)}' is a symlink; refusing to write through it`,
    );
  }
  if (!force) {
    throw new CpOutDestinationError(
      `the destination '${printable(destination)}' exists (use force to replace it)`,
    );
  }
  if (basename(destination) === '' || destination === '/') {
    throw new CpOutDestinationError('refusing to replace the filesystem root');
  }
}
