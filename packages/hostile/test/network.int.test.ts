import { join } from 'node:path';
import { GenericContainer, type StartedTestContainer } from 'testcontainers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBox, destroyBox, destroyLeftovers, escapes, execBox, FIXTURES, RUNTIMES } from './_harness.js';

let peer: StartedTestContainer;
let peerTarget: string;

beforeAll(async () => {
  // A peer on the default bridge that would answer anyone who can reach it.
  peer = await new GenericContainer('ca-sbx-base:python')
    .withCommand(['python3', '-m', 'http.server', '8080'])
    .withExposedPorts(8080)
    .start();
  peerTarget = `${peer.getIpAddress('bridge')}:8080`;
});

afterAll(async () => {
  await destroyLeftovers();
  await peer?.stop();
});

describe.each(RUNTIMES)('network under %s', (runtime) => {
  it('offline: only lo; DNS, the gateway and a peer container are unreachable', async () => {
    const box = await createBox(join(FIXTURES, 'network'), { runtime, network: 'offline' });
    const probe = await execBox(box.id, ['bash', 'probe.sh', peerTarget], ['--timeout', '60']);
    expect(probe.stdout).toMatch(/^interfaces: lo \n/);
    expect(probe.stdout).toContain('BLOCKED dns');
    expect(probe.stdout).toContain('BLOCKED 172.17.0.1:80');
    expect(probe.stdout).toContain(`BLOCKED ${peerTarget}`);
    expect(escapes(probe.stdout)).toEqual([]);
    await destroyBox(box.id);
  });

  it('clone-then-cut: the running box is cut from the network too', async () => {
    const box = await createBox(join(FIXTURES, 'network'), { runtime, network: 'clone-then-cut' });
    const probe = await execBox(box.id, ['bash', 'probe.sh', peerTarget], ['--timeout', '60']);
    expect(probe.stdout).toMatch(/^interfaces: lo \n/);
    expect(probe.stdout).toContain(`BLOCKED ${peerTarget}`);
    expect(escapes(probe.stdout)).toEqual([]);
    await destroyBox(box.id);
  });
});

it('the peer really answers from an ordinary container (the probe is not vacuous)', async () => {
  const { docker } = await import('@ca-sandbox/docker/cli');
  const [host, port] = peerTarget.split(':');
  const probe = await docker(
    [
      'run',
      '--rm',
      'ca-sbx-base:debian',
      'bash',
      '-c',
      `timeout 5 bash -c 'exec 3<>/dev/tcp/${host}/${port}' && echo REACHED`,
    ],
    { allowFailure: true },
  );
  expect(probe.stdout).toContain('REACHED');
});
