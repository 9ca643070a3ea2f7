import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, destroyBox, execBox, labeledLeft, RUNTIMES, uniqueName } from './_harness.js';

// A box of a cached source starts beside the clone from the source's last deps image, on the new
// (empty) volume. The install that made that image is the repo's code, run as 1000, and the
// image's /work/repo is 1000's: what the install wrote there must never reach a later checkout
// (the engine copies an image's directory into an empty volume at its first mount).

/** A repo whose install (its .pnpmfile.cjs, run by pnpm) writes into the image's /work/repo. */
async function plantingRepo(dir: string, git: boolean): Promise<void> {
  await mkdir(dir, { recursive: true });
  await writeFile(
    join(dir, 'package.json'),
    JSON.stringify({
      name: 'early-box-volume',
      version: '1.0.0',
      private: true,
      packageManager: 'pnpm@9.15.9',
    }),
  );
  await writeFile(
    join(dir, '.pnpmfile.cjs'),
    [
      "const fs = require('fs');",
      "try { fs.writeFileSync('/work/repo/PLANTED-BY-INSTALL', 'not of the source'); console.log('planted'); }",
      "catch (error) { console.log('could not plant: ' + error.message); }",
      'module.exports = {};',
      '',
    ].join('\n'),
  );
  if (!git) return;
  const run = (args: string[]) => execa('git', args, { cwd: dir });
  await run(['init', '-q']);
  await run(['add', '-A']);
  await run(['-c', 'user.email=t@example.invalid', '-c', 'user.name=t', 'commit', '-qm', 'init']);
}

async function create(source: string, runtime: string, network: string, made: Set<string>) {
  const name = uniqueName('hostile-early-vol');
  made.add(name);
  const result = await cli([
    'create',
    source,
    '--name',
    name,
    '--network',
    network,
    '--runtime',
    runtime,
    '--verbose',
  ]);
  expect(result.exitCode, result.stderr.slice(-2000)).toBe(0);
  return { id: name, kept: /early box kept:/.test(result.stderr), planted: /\| planted/.test(result.stderr) };
}

describe.each(RUNTIMES)('a box started beside the clone shares a fresh volume, under %s', (runtime) => {
  const made = new Set<string>();
  let work: string;

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), `ca-hostile-early-vol-${runtime}-`));
  });
  afterAll(async () => {
    for (const id of made) await cli(['destroy', id]);
    await rm(work, { recursive: true, force: true });
  });

  for (const kind of ['plain directory', 'git repository'] as const) {
    it(`${kind}: what the install wrote into the image's /work/repo never joins a later checkout`, async () => {
      const source = join(work, kind === 'git repository' ? 'git' : 'plain');
      await plantingRepo(source, kind === 'git repository');
      const cold = await create(source, runtime, 'clone-then-cut', made);
      // Not vacuous: the install did write into the image's /work/repo.
      expect(cold.planted).toBe(true);
      // The same source again: its box starts from that image beside the clone, and is kept. A
      // git source's clone used to fail here ("destination path '/work/repo' already exists").
      const cached = await create(source, runtime, 'offline', made);
      expect(cached.kept).toBe(true);
      for (const id of [cold.id, cached.id]) {
        // A glob, not ls: coreutils' ls gets EINVAL from this host's gVisor (statx).
        const listing = await execBox(id, ['/bin/sh', '-c', 'echo /work/repo/* /work/repo/.*']);
        expect(listing.exitCode).toBe(0);
        expect(listing.stdout).toContain('package.json');
        expect(listing.stdout).not.toContain('PLANTED-BY-INSTALL');
        // The box still owns its checkout.
        expect((await execBox(id, ['/bin/touch', '/work/repo/.written-by-box'])).exitCode).toBe(0);
        await destroyBox(id);
        made.delete(id);
        expect(await labeledLeft(id)).toEqual([]);
      }
    }, 600_000);
  }
});
