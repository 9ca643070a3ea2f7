import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dockerReachable, forceRemoveSandbox, LIFECYCLE_BUILT, remainingObjects, runBin } from './_bin.js';

const READY = LIFECYCLE_BUILT && dockerReachable();
const EXAMPLE = fileURLToPath(new URL('../../../examples/hello-node', import.meta.url));
const HOG = 'const a = []; for (;;) a.push(Buffer.alloc(1 << 20, 1));';
const WARNING =
  "warning: the command was killed for want of memory (exit 137): the box reached its memory limit; a box created with --memory (e.g. 'ca-sandbox create <repo> --memory 8g') gets more";

// nx running five test tasks at once in a 2 GiB box (a new-user trial): each died with exit 137
// and "Killed", and nothing said the box's memory limit did it. Now exec says so when the engine
// logged an oom event of the box during the command, and only then.
describe.skipIf(!READY)('exec of a command the memory limit kills (bin)', () => {
  const id = `sbx-${randomUUID().slice(0, 8)}`;

  beforeAll(async () => {
    const made = await runBin(['create', EXAMPLE, '--name', id, '--memory', '256m']);
    expect(made.code, made.stderr).toBe(0);
  }, 300_000);

  afterAll(async () => {
    await runBin(['destroy', id]);
    forceRemoveSandbox(id);
    expect(remainingObjects(id)).toEqual([]);
  });

  it('exits 137 and says the memory limit killed it; --json carries outOfMemory', async () => {
    const text = await runBin(['exec', id, '--', 'node', '-e', HOG]);
    expect(text.code).toBe(137);
    expect(text.stderr.trimEnd().split('\n').at(-1)).toBe(WARNING);
    const json = await runBin(['exec', id, '--json', '--', 'node', '-e', HOG]);
    expect(json.code).toBe(137);
    expect(JSON.parse(json.stdout)).toMatchObject({ exitCode: 137, outOfMemory: true, timedOut: false });
  }, 120_000);

  it('says nothing of memory for a command that kills itself with SIGKILL', async () => {
    const text = await runBin(['exec', id, '--', 'sh', '-c', 'kill -9 $$']);
    expect(text.code).toBe(137);
    expect(text.stderr).not.toContain('want of memory');
    const json = await runBin(['exec', id, '--json', '--', 'sh', '-c', 'kill -9 $$']);
    expect(JSON.parse(json.stdout)).toMatchObject({ exitCode: 137 });
    expect(JSON.parse(json.stdout)).not.toHaveProperty('outOfMemory');
  }, 120_000);
});
