// A stopped build removes its own RUN containers and never another build's: two builds on one base
// run identical RUN lines (the setuid strip, the toolchain probe), and removing the other build's
// step container failed that build ("removal of container … is already in progress") in CI.
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { dockerSync, engineReady, TEST_BASE } from '../test/real-engine.js';
import { leftoverBuildContainers, removeBuildContainers } from './build-cleanup.js';
import { LABEL_BUILD_ID } from './dockerfile.js';

const BASE = TEST_BASE;
const ready = engineReady;
const docker = dockerSync;

describe.skipIf(!ready)('removeBuildContainers (real engine)', () => {
  const started: string[] = [];
  afterAll(() => {
    // The one this build removed is gone already: `rm --force` of a missing container fails.
    for (const id of started) {
      try {
        docker('rm', '--force', id);
      } catch {}
    }
  });

  /** A container shaped like a RUN step of a build: from the base, the RUN line's command, the build's id. */
  const step = (buildId: string, token: string) => {
    const id = docker('run', '--detach', '--label', `${LABEL_BUILD_ID}=${buildId}`, BASE, 'sleep', token);
    started.push(id);
    return id;
  };

  it("takes this build's step containers and leaves another build's identical step running", async () => {
    const token = `${300 + (randomBytes(2).readUInt16BE(0) % 1000)}`;
    const dockerfile = `FROM ${BASE}\nRUN ${JSON.stringify(['sleep', token])}\n`;
    const mine = randomBytes(8).toString('hex');
    const other = randomBytes(8).toString('hex');
    const startedAt = Date.now();
    const ours = step(mine, token);
    const theirs = step(other, token);
    expect(await leftoverBuildContainers(mine, BASE, dockerfile, startedAt)).toEqual([ours]);
    await removeBuildContainers(mine, BASE, dockerfile, startedAt);
    const state = (id: string) => docker('inspect', '--format', '{{.State.Running}}', id);
    expect(() => state(ours)).toThrow();
    expect(state(theirs)).toBe('true');
  }, 60_000);
});
