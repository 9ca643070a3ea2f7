import { describe, expect, it } from 'vitest';
import { engineSocket } from './engine-api.js';

describe('engineSocket', () => {
  it('uses the default socket, or the unix socket DOCKER_HOST names', () => {
    expect(engineSocket({})).toBe('/var/run/docker.sock');
    expect(engineSocket({ DOCKER_HOST: 'unix:///run/user/1000/docker.sock' })).toBe(
      '/run/user/1000/docker.sock',
    );
  });

  it('leaves tcp, ssh, contexts and TLS to the CLI', () => {
    expect(engineSocket({ DOCKER_HOST: 'tcp://10.0.0.1:2376' })).toBeUndefined();
    expect(engineSocket({ DOCKER_HOST: 'ssh://me@host' })).toBeUndefined();
    expect(engineSocket({ DOCKER_CONTEXT: 'remote' })).toBeUndefined();
    expect(engineSocket({ DOCKER_TLS_VERIFY: '1' })).toBeUndefined();
  });
});
