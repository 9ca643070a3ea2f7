import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { docker } from '@ca-sandbox/docker/cli';
import { afterAll, describe, expect, it } from 'vitest';
import { createBox, destroyBox, destroyLeftovers, execBox, FIXTURES, RUNTIMES } from './_harness.js';

afterAll(destroyLeftovers);

describe('install settings and install code of the repo', () => {
  it(".npmrc redirecting the registry, off TLS checks, a token and a proxy: ignored, the user's registry installs", async () => {
    const canary = `canary-${randomUUID()}`;
    // Were the repo's registry (127.0.0.1:9 in the build container: nothing listens) or its proxy
    // used, the install would fail; the create succeeds because they are dropped.
    const box = await createBox(join(FIXTURES, 'npmrc-redirect'), {
      network: 'clone-then-cut',
      env: { NPM_TOKEN: canary },
    });
    const result = await execBox(box.id, [
      'sh',
      '-c',
      'node -e "console.log(require(\'is-number\')(7))" && cat /deps/src/.npmrc',
    ]);
    expect(result.exitCode, result.stderr).toBe(0);
    // The install saw only the harmless setting of the repo's .npmrc.
    expect(result.stdout).toBe('true\nfund=false\n');
    const history = await docker(['history', '--no-trunc', box.image]);
    expect(history.stdout).not.toContain(canary);
    await destroyBox(box.id);
  });

  it.each(RUNTIMES)(
    'a fake node planted first on PATH by install code never runs when the box checks or links node_modules (%s)',
    async (runtime) => {
      const box = await createBox(join(FIXTURES, 'fake-node'), { network: 'clone-then-cut', runtime });
      const result = await execBox(box.id, [
        'sh',
        '-c',
        'cat /work/repo/PWNED-fake-node 2>/dev/null; test -d node_modules && readlink node_modules/is-number',
      ]);
      // The fake is in place (else the test proves nothing), was never run, and the deps are there:
      // under runc the repo view's node_modules (pnpm's own link into its store folder), under
      // gVisor our links into the image.
      const planted = await execBox(box.id, ['sh', '-c', 'test -x /deps/pm/bin/node && echo planted']);
      expect(planted.stdout).toBe('planted\n');
      const link =
        runtime === 'runc'
          ? '.pnpm/is-number@7.0.0/node_modules/is-number'
          : '/deps/src/node_modules/is-number';
      expect(result.stdout).toBe(`${link}\n`);
      await destroyBox(box.id);
    },
  );
});
