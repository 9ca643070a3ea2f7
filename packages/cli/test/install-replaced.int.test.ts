import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { dockerReachable, forceRemoveSandbox, LOCAL_IMAGES_ENV, remainingObjects, runBin } from './_bin.js';

const PACKAGE = fileURLToPath(new URL('..', import.meta.url));
const BUNDLE = join(PACKAGE, 'dist', 'bundle');
const EXAMPLE = fileURLToPath(new URL('../../../examples/hello-node', import.meta.url));
const READY = existsSync(join(BUNDLE, 'main.js')) && dockerReachable();

// The bundle loads its chunks as it goes. An install replaced under a running create (an upgrade,
// a rebuild of dist/) used to fail the create after the box passed its gate, when the summary
// loaded one more chunk: exit 1, no id printed, and the box left running (new-user trial). The
// create now loads all it needs after the box before it creates anything.
describe.skipIf(!READY)('the CLI removed from under a running create', () => {
  const copy = mkdtempSync(join(tmpdir(), 'ca-sbx-cli-copy-'));
  const id = `sbx-${randomUUID().slice(0, 8)}`;

  afterAll(async () => {
    await runBin(['destroy', id]).catch(() => undefined);
    forceRemoveSandbox(id);
    expect(remainingObjects(id)).toEqual([]);
    rmSync(copy, { recursive: true, force: true });
  });

  it('still ends with the id printed and the box usable (a cache hit loads nothing more)', async () => {
    cpSync(join(PACKAGE, 'bin'), join(copy, 'bin'), { recursive: true });
    cpSync(join(PACKAGE, 'package.json'), join(copy, 'package.json'));
    mkdirSync(join(copy, 'dist'));
    cpSync(BUNDLE, join(copy, 'dist', 'bundle'), { recursive: true });
    const result = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(
        process.execPath,
        [join(copy, 'bin', 'ca-sandbox.js'), 'create', EXAMPLE, '--name', id],
        {
          env: { ...(process.env as Record<string, string>), ...LOCAL_IMAGES_ENV, NO_COLOR: '1' },
        },
      );
      let stdout = '';
      let stderr = '';
      let removed = false;
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk;
      });
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk;
        // Once the create is under way, the code it has not loaded yet is gone.
        if (!removed && stderr.includes('clone: started')) {
          removed = true;
          rmSync(join(copy, 'dist'), { recursive: true, force: true });
        }
      });
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
    expect(result.stderr).toContain('clone: started');
    expect(existsSync(join(copy, 'dist'))).toBe(false);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe(`${id}\n`);
    expect((await runBin(['exec', id, '--', 'cat', 'package.json'])).code).toBe(0);
  }, 300_000);
});
