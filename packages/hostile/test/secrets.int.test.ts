import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { docker } from '@ca-sandbox/docker/cli';
import { afterAll, describe, expect, it } from 'vitest';
import { createBox, destroyBox, destroyLeftovers, execBox, FIXTURES, RUNTIMES } from './_harness.js';

afterAll(destroyLeftovers);

describe('secrets and install scripts', () => {
  it('host GITHUB_TOKEN and AWS_SECRET_ACCESS_KEY never reach the box, docker inspect or the image history', async () => {
    const canary = `canary-${randomUUID()}`;
    const env = {
      GITHUB_TOKEN: canary,
      AWS_SECRET_ACCESS_KEY: canary,
      NPM_TOKEN: canary,
      CA_SANDBOX_SECRET: canary,
    };
    // clone-then-cut builds a deps image, so the build path is covered as well as the run path.
    const box = await createBox(join(FIXTURES, 'setuid-install'), { network: 'clone-then-cut', env });
    const dump = await execBox(box.id, ['sh', '-c', 'env; cat /proc/1/environ | tr "\\0" "\\n"']);
    expect(dump.stdout).not.toContain(canary);
    const inspect = await docker(['container', 'inspect', box.container]);
    expect(inspect.stdout).not.toContain(canary);
    const history = await docker(['history', '--no-trunc', box.image]);
    expect(history.stdout).not.toContain(canary);
    const image = await docker(['image', 'inspect', box.image]);
    expect(image.stdout).not.toContain(canary);
    await destroyBox(box.id);
  });

  it.each(RUNTIMES)(
    'a setuid-root shell planted by an install script gives no root under %s',
    async (runtime) => {
      const box = await createBox(join(FIXTURES, 'setuid-install'), { network: 'clone-then-cut', runtime });
      const result = await execBox(box.id, ['sh', 'try-root.sh']);
      // The install script did plant it (else this test would prove nothing)...
      expect(result.stdout).toMatch(/rootbash euid=/);
      // ...and running it keeps us at 1000.
      for (const line of result.stdout.split('\n').filter((l) => l.includes('euid='))) {
        expect(line).toMatch(/euid=1000$/);
      }
      await destroyBox(box.id);
    },
  );
});
