// A repository with git submodules: the clone never fetches them (offline helper, and a URL's
// submodules would be other hosts), so each is an empty folder in the box. create says so.
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { dockerReachable, forceRemoveSandbox, LIFECYCLE_BUILT, remainingObjects, runBin } from './_bin.js';

const READY = LIFECYCLE_BUILT && dockerReachable();

describe.skipIf(!READY)('a repository with submodules, through the bin (real engine)', () => {
  const id = `sbx-${randomUUID().slice(0, 8)}`;
  const dir = mkdtempSync(join(tmpdir(), 'ca-submodules-'));
  afterAll(() => {
    forceRemoveSandbox(id);
    rmSync(dir, { recursive: true, force: true });
  });

  it('warns that their folders are empty in the box, naming them (sanitised), and the create goes on', async () => {
    const repo = join(dir, 'repo');
    const sub = join(dir, 'sub');
    const git = (cwd: string, ...args: string[]) =>
      execFileSync('git', ['-c', 'user.email=t@example.invalid', '-c', 'user.name=t', ...args], { cwd });
    mkdirSync(sub);
    git(sub, 'init', '-q', '-b', 'main');
    writeFileSync(join(sub, 'data.json'), '{}\n');
    git(sub, 'add', 'data.json');
    git(sub, 'commit', '-qm', 'data');
    const commit = git(sub, 'rev-parse', 'HEAD').toString().trim();
    mkdirSync(repo);
    git(repo, 'init', '-q', '-b', 'main');
    writeFileSync(join(repo, 'README.md'), '# with submodules\n');
    git(repo, 'add', 'README.md');
    // Gitlinks as `git submodule add` leaves them (the .gitmodules file is not what git checks out).
    for (const path of ['tests/suite', 'vendor/a\u001b[2Jb', 'vendor/c', 'vendor/d'])
      git(repo, 'update-index', '--add', '--cacheinfo', `160000,${commit},${path}`);
    git(repo, 'commit', '-qm', 'gitlinks');

    const created = await runBin(['create', repo, '--name', id, '--network', 'offline']);
    expect(created.code, created.stderr).toBe(0);
    const warning = created.stderr.split('\n').find((line) => line.includes('git submodule'));
    expect(warning).toBe(
      'warning: the repository has 4 git submodules (tests/suite, "vendor/a\\033[2Jb", vendor/c, 1 more): their folders are empty in the box (submodules are not cloned)',
    );
    const inBox = await runBin(['exec', id, '--', 'sh', '-c', 'ls -A tests/suite | wc -l; cat README.md']);
    expect(inBox).toMatchObject({ code: 0, stdout: '0\n# with submodules\n' });
    const destroyed = await runBin(['destroy', id]);
    expect(destroyed.code, destroyed.stderr).toBe(0);
    expect(remainingObjects(id)).toEqual([]);
  }, 180_000);
});
