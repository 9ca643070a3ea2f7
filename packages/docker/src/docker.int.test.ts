import { describe, expect, it } from 'vitest';
import { DockerCommandError, DockerUnavailableError } from './errors.js';
import { docker, spawnDocker } from './exec-docker.js';
import { dockerInfo } from './info.js';
import { imageExists, inspectImage } from './inspect.js';

describe('docker on the real engine', () => {
  it('runs argv arrays and reports the engine', async () => {
    const info = await dockerInfo({ fresh: true });
    expect(info.serverVersion).toMatch(/\d+\.\d+/);
    expect(info.runtimes).toContain('runc');
  });

  it('throws DockerCommandError with argv, docker exit code and stderr', async () => {
    const error = await docker(['container', 'inspect', '--', 'ca-sbx-no-such-container']).catch((e) => e);
    expect(error).toBeInstanceOf(DockerCommandError);
    expect(error.exitCode).toBe(1);
    expect(error.argv).toEqual(['container', 'inspect', '--', 'ca-sbx-no-such-container']);
    expect(error.stderr).toMatch(/No such/i);
    expect(error.message).toMatch(/^docker container failed with exit code 1/);
  });

  it('returns the failure instead of throwing with allowFailure', async () => {
    const result = await docker(['image', 'inspect', 'ca-sbx-no-such:image'], { allowFailure: true });
    expect(result.exitCode).toBe(1);
    expect(await imageExists('ca-sbx-no-such:image')).toBe(false);
    expect((await inspectImage('ca-sbx-base:debian'))?.Id).toMatch(/^sha256:/);
  });

  it('says "Docker is not available" when the daemon does not answer', async () => {
    const saved = process.env.DOCKER_HOST;
    process.env.DOCKER_HOST = 'unix:///nonexistent-ca-sandbox.sock';
    try {
      const error = await docker(['version']).catch((e) => e);
      expect(error).toBeInstanceOf(DockerUnavailableError);
      expect(error.message).toMatch(/^Docker is not available/);
      expect(error.kind).toBe('prerequisite');
      expect(error.hint).toMatch(/docker info/);
      const child = spawnDocker(['version']);
      const result = await child;
      expect(result.exitCode).not.toBe(0);
    } finally {
      if (saved === undefined) delete process.env.DOCKER_HOST;
      else process.env.DOCKER_HOST = saved;
    }
  });

  it('streams a container run without buffering through spawnDocker', async () => {
    const child = spawnDocker([
      'run',
      '--rm',
      '--network',
      'none',
      'ca-sbx-base:debian',
      'sh',
      '-c',
      'echo out; echo err >&2; exit 3',
    ]);
    const chunks: Buffer[] = [];
    const errors: Buffer[] = [];
    child.stdout?.on('data', (chunk: Buffer) => chunks.push(chunk));
    child.stderr?.on('data', (chunk: Buffer) => errors.push(chunk));
    const result = await child;
    expect(result.exitCode).toBe(3);
    expect(Buffer.concat(chunks).toString()).toBe('out\n');
    expect(Buffer.concat(errors).toString()).toBe('err\n');
  });
});

describe('docker info security options', () => {
  it('lists the daemon seccomp profile on this engine', async () => {
    const { securityOptions } = await dockerInfo({ fresh: true });
    const seccomp = securityOptions.find((option) => option.split(',').includes('name=seccomp'));
    expect(seccomp).toMatch(/^name=seccomp,profile=/);
  });
});
