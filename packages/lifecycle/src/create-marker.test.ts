import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sandboxStateDir } from './command-log.js';
import { clearCreating, killedCreateOf, markCreating } from './create-marker.js';

let state: string;
const saved = process.env.XDG_STATE_HOME;
beforeEach(async () => {
  state = await mkdtemp(join(tmpdir(), 'ca-mark-'));
  process.env.XDG_STATE_HOME = state;
});
afterEach(async () => {
  if (saved === undefined) delete process.env.XDG_STATE_HOME;
  else process.env.XDG_STATE_HOME = saved;
  await rm(state, { recursive: true, force: true });
});

describe('the mark of a create under way', () => {
  it('is not a killed create while its process lives, and goes with its folder when cleared', async () => {
    await markCreating('mark-1', 'aaaa');
    expect(existsSync(sandboxStateDir('mark-1'))).toBe(true);
    expect(await killedCreateOf('mark-1')).toBe(false);
    await clearCreating('mark-1', 'aaaa');
    expect(existsSync(sandboxStateDir('mark-1'))).toBe(false);
  });

  it('names a killed create: a process gone, or a mark cut short', async () => {
    const exited = spawnSync('true');
    const dir = sandboxStateDir('mark-2');
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, 'creating-bbbb.json'), JSON.stringify({ pid: exited.pid, startedAt: '' }));
    expect(await killedCreateOf('mark-2')).toBe(true);
    await writeFile(join(dir, 'creating-bbbb.json'), '{"pid":');
    expect(await killedCreateOf('mark-2')).toBe(true);
    // No mark: an id nothing was made for.
    expect(await killedCreateOf('mark-3')).toBe(false);
  });

  it('keeps a folder that holds other records when cleared', async () => {
    await markCreating('mark-4', 'cccc');
    await writeFile(join(sandboxStateDir('mark-4'), 'commands.jsonl'), '');
    await clearCreating('mark-4', 'cccc');
    expect(existsSync(join(sandboxStateDir('mark-4'), 'commands.jsonl'))).toBe(true);
  });
});
