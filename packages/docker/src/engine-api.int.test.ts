import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { listLabeled } from './engine-api.js';
import { DockerUnavailableError } from './errors.js';
import { docker } from './exec-docker.js';

const id = `sbx-${randomUUID().slice(0, 8)}`;
const volume = `ca-sbx-${id}`;
const labels = ['ca.sandbox=1', `ca.sandbox.id=${id}`];

afterAll(async () => {
  await docker(['volume', 'rm', '-f', volume], { allowFailure: true });
});

describe('labeled listings on the real engine', () => {
  it('the socket and the CLI give the same answer', async () => {
    await docker([
      'volume',
      'create',
      '--label',
      'ca.sandbox=1',
      '--label',
      `ca.sandbox.id=${id}`,
      '--label',
      'ca.sandbox.policy=offline',
      volume,
    ]);
    const listed = await listLabeled('volume', labels, 'ca.sandbox.policy');
    expect(listed).toEqual([{ name: volume, label: 'offline' }]);
    // The CLI, given the same resolved engine, agrees.
    const { stdout } = await docker(['volume', 'ls', '-q', '--filter', `label=ca.sandbox.id=${id}`]);
    expect(stdout.trim()).toBe(volume);
    expect(await listLabeled('container', labels)).toEqual([]);
    expect(await listLabeled('network', labels)).toEqual([]);
  });

  it('a dead socket is never an empty answer: it reports Docker unavailable', async () => {
    const saved = process.env.DOCKER_HOST;
    process.env.DOCKER_HOST = 'unix:///nonexistent-ca-sandbox.sock';
    try {
      await expect(listLabeled('container', labels)).rejects.toBeInstanceOf(DockerUnavailableError);
    } finally {
      if (saved === undefined) delete process.env.DOCKER_HOST;
      else process.env.DOCKER_HOST = saved;
    }
  });
});
