import { cp, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { docker } from '@ca-sandbox/docker/cli';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, destroyBox, execBox, FIXTURES, labeledLeft, RUNTIMES, uniqueName } from './_harness.js';

// Official node images name their ENTRYPOINT by a bare name (`docker-entrypoint.sh`), found on the
// image's PATH, where a deps image puts the dependencies' bins first. The repo's install
// (entrypoint-shadow) plants one there that marks the volume and /tmp when it runs: kept, the
// image's entrypoint would run it as the box's main process the moment the box starts, before the
// gate and create's return. The base here is ours, built like those images (a test image:
// `ca-sbx:*` may stay).
const BASE = 'ca-sbx:test-entrypoint-base';

describe.each(RUNTIMES)('an image entrypoint named on the PATH, under %s', (runtime) => {
  const made = new Set<string>();
  let source: string;
  let context: string;

  beforeAll(async () => {
    context = await mkdtemp(join(tmpdir(), 'ca-hostile-entrypoint-base-'));
    await writeFile(join(context, 'docker-entrypoint.sh'), '#!/bin/sh\nexec "$@"\n', { mode: 0o755 });
    await writeFile(
      join(context, 'Dockerfile'),
      [
        'FROM ca-sbx-base:node',
        'COPY docker-entrypoint.sh /usr/local/bin/',
        'ENTRYPOINT ["docker-entrypoint.sh"]',
        'CMD ["node"]',
        '',
      ].join('\n'),
    );
    await docker(['build', '--quiet', '--tag', BASE, context]);
    source = await mkdtemp(join(tmpdir(), `ca-hostile-entrypoint-${runtime}-`));
    await cp(join(FIXTURES, 'entrypoint-shadow'), source, { recursive: true });
  }, 300_000);
  afterAll(async () => {
    for (const id of made) await cli(['destroy', id]);
    await rm(source, { recursive: true, force: true });
    await rm(context, { recursive: true, force: true });
  });

  it('never runs: the box has no entrypoint, its main process is /bin/sleep, the gate says so', async () => {
    const id = uniqueName('hostile-entry');
    made.add(id);
    const created = await cli([
      'create',
      source,
      '--name',
      id,
      '--network',
      'clone-then-cut',
      '--runtime',
      runtime,
      '--base-image',
      BASE,
    ]);
    expect(created.exitCode, created.stderr).toBe(0);
    // The planted entrypoint is there, first on the PATH, and nothing of it ran.
    expect(
      (await execBox(id, ['/bin/cat', '/deps/node_modules/.bin/docker-entrypoint.sh'])).stdout,
    ).toContain('entrypoint-shadow-ran');
    const marks = await execBox(id, ['/bin/ls', '-a', '/work/repo', '/tmp']);
    expect(marks.stdout).not.toContain('entrypoint-shadow-ran');
    const ps = await execBox(id, ['/bin/ps', '-eo', 'args']);
    expect(ps.stdout).not.toContain('docker-entrypoint.sh');
    expect(ps.stdout).toMatch(/^\/bin\/sleep infinity$/m);
    const inspect = JSON.parse((await docker(['inspect', `ca-sbx-${id}`])).stdout)[0];
    expect(inspect.Config.Entrypoint ?? []).toEqual([]);
    const verify = await cli(['verify', id, '--json']);
    expect(verify.exitCode, verify.stdout).toBe(0);
    expect(JSON.parse(verify.stdout).checks).toContainEqual(
      expect.objectContaining({ check: 'own-main-process', pass: true }),
    );
    await destroyBox(id);
    made.delete(id);
    expect(await labeledLeft(id)).toEqual([]);
  }, 600_000);
});
