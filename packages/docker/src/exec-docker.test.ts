import { describe, expect, it } from 'vitest';
import { DockerResponseError } from './errors.js';
import { dockerEnv, isDaemonUnreachable } from './exec-docker.js';
import { parseDockerInfo, runtimeIsNetworkless } from './info.js';
import { parseContainerInspect } from './inspect.js';
import { labelArgs, SANDBOX_FILTER, sandboxIdFilter, sandboxLabels } from './labels.js';

describe('dockerEnv', () => {
  it('passes only what the docker client needs, never the caller secrets', () => {
    process.env.GITHUB_TOKEN = 'canary-token';
    process.env.AWS_SECRET_ACCESS_KEY = 'canary-key';
    process.env.DOCKER_HOST = 'unix:///var/run/docker.sock';
    try {
      const env = dockerEnv();
      expect(Object.values(env)).not.toContain('canary-token');
      expect(Object.values(env)).not.toContain('canary-key');
      expect(env.DOCKER_HOST).toBe('unix:///var/run/docker.sock');
      expect(
        Object.keys(env).every((key) => key === 'PATH' || key === 'HOME' || key.startsWith('DOCKER_')),
      ).toBe(true);
    } finally {
      delete process.env.GITHUB_TOKEN;
      delete process.env.AWS_SECRET_ACCESS_KEY;
      delete process.env.DOCKER_HOST;
    }
  });
});

describe('isDaemonUnreachable', () => {
  it.each([
    'Cannot connect to the Docker daemon at unix:///nonexistent.sock. Is the docker daemon running?',
    'error during connect: Get "http://%2Fvar%2Frun%2Fdocker.sock/v1.41/info": dial unix /var/run/docker.sock: connect: no such file or directory',
  ])('recognises %s', (stderr) => {
    expect(isDaemonUnreachable(stderr)).toBe(true);
  });

  it('does not mistake a command error for a dead daemon', () => {
    expect(isDaemonUnreachable('Error: No such container: ca-sbx-x')).toBe(false);
    expect(isDaemonUnreachable('Error response from daemon: conflict')).toBe(false);
  });
});

describe('labels', () => {
  it('labels every object as ours and by id; caller labels cannot override them', () => {
    expect(sandboxLabels('abc', { 'ca.sandbox': '0', 'ca.sandbox.repo': 'r' })).toEqual({
      'ca.sandbox': '1',
      'ca.sandbox.id': 'abc',
      'ca.sandbox.repo': 'r',
    });
    expect(SANDBOX_FILTER).toBe('label=ca.sandbox=1');
    expect(sandboxIdFilter('abc')).toBe('label=ca.sandbox.id=abc');
    expect(labelArgs({ a: '1', b: 'x y' })).toEqual(['--label', 'a=1', '--label', 'b=x y']);
  });
});

describe('parseContainerInspect', () => {
  const minimal = {
    Id: 'f'.repeat(64),
    Name: '/box',
    State: { Status: 'running', Running: true },
    Config: { Labels: null, Env: null },
    HostConfig: { Binds: null, CapDrop: ['ALL'], Memory: 1 },
    Mounts: null,
  };

  it('fills nulls the engine returns with empty values', () => {
    const inspect = parseContainerInspect([minimal]);
    expect(inspect.HostConfig.Binds).toEqual([]);
    expect(inspect.Config.Labels).toEqual({});
    expect(inspect.Mounts).toEqual([]);
    expect(inspect.HostConfig.Privileged).toBe(false);
  });

  it('refuses a document without the fields the gate relies on', () => {
    expect(() => parseContainerInspect({ Id: 'x' })).toThrow(/unexpected shape/);
    expect(() => parseContainerInspect('not json')).toThrow(/JSON|shape/);
  });
});

describe('parseDockerInfo', () => {
  it('keeps the daemon security options (seccomp profile, apparmor) for the isolation gate', () => {
    const info = parseDockerInfo(
      JSON.stringify({
        ServerVersion: '20.10.24',
        Runtimes: { runc: {}, runsc: {} },
        SecurityOptions: ['name=apparmor', 'name=seccomp,profile=default'],
      }),
    );
    expect(info.securityOptions).toEqual(['name=apparmor', 'name=seccomp,profile=default']);
    expect(info.runtimes).toEqual(['runc', 'runsc']);
  });

  it('keeps the arguments each runtime is registered with: gVisor with --network=none is networkless', () => {
    const info = parseDockerInfo(
      JSON.stringify({
        ServerVersion: '20.10.24',
        Runtimes: {
          runc: { path: 'runc' },
          runsc: { path: '/usr/bin/runsc', runtimeArgs: ['--network=none'] },
        },
      }),
    );
    expect(info.runtimeArgs).toEqual({ runc: [], runsc: ['--network=none'] });
    expect(runtimeIsNetworkless(info, 'runsc')).toBe(true);
    expect(runtimeIsNetworkless(info, 'runc')).toBe(false);
    expect(runtimeIsNetworkless({ runtimeArgs: { runsc: ['--platform=systrap'] } }, 'runsc')).toBe(false);
  });

  it('reads a missing or null SecurityOptions as none', () => {
    expect(parseDockerInfo('{"ServerVersion":"1","SecurityOptions":null}').securityOptions).toEqual([]);
    expect(parseDockerInfo('{"ServerVersion":"1"}').securityOptions).toEqual([]);
  });

  it('keeps the engine cores and memory, the bounds of --cpus and --memory (0 when not reported)', () => {
    const info = parseDockerInfo('{"ServerVersion":"1","NCPU":2,"MemTotal":25275953152}');
    expect(info).toMatchObject({ cpus: 2, memTotalBytes: 25_275_953_152 });
    expect(parseDockerInfo('{"ServerVersion":"1"}')).toMatchObject({ cpus: 0, memTotalBytes: 0 });
  });

  it('throws DockerResponseError on output that is not docker info', () => {
    expect(() => parseDockerInfo('not json')).toThrow(DockerResponseError);
    expect(() => parseDockerInfo('{"SecurityOptions":"name=seccomp"}')).toThrow(DockerResponseError);
  });
});

describe('dockerEnv and DOCKER_CONFIG', () => {
  it('keeps DOCKER_CONFIG for registry auth (@ca-sandbox/run blanks the proxies it injects)', () => {
    const saved = process.env.DOCKER_CONFIG;
    process.env.DOCKER_CONFIG = '/tmp/ca-sbx-docker-config';
    try {
      expect(dockerEnv().DOCKER_CONFIG).toBe('/tmp/ca-sbx-docker-config');
    } finally {
      if (saved === undefined) delete process.env.DOCKER_CONFIG;
      else process.env.DOCKER_CONFIG = saved;
    }
  });
});
