import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseEngineHost, resolveEndpoint } from './endpoint.js';
import { DockerUnavailableError } from './errors.js';

let config: string;
const digest = (name: string) => createHash('sha256').update(name).digest('hex');

/** A context as `docker context create` stores it, with optional TLS files. */
function writeContext(name: string, host: string, options: { skipTls?: boolean; tls?: boolean } = {}): void {
  const meta = join(config, 'contexts', 'meta', digest(name));
  mkdirSync(meta, { recursive: true });
  writeFileSync(
    join(meta, 'meta.json'),
    JSON.stringify({
      Name: name,
      Metadata: {},
      Endpoints: { docker: { Host: host, SkipTLSVerify: options.skipTls ?? false } },
    }),
  );
  if (options.tls) {
    const tls = join(config, 'contexts', 'tls', digest(name), 'docker');
    mkdirSync(tls, { recursive: true });
    for (const file of ['ca.pem', 'cert.pem', 'key.pem']) writeFileSync(join(tls, file), `${name} ${file}`);
  }
}

beforeEach(() => {
  config = mkdtempSync(join(tmpdir(), 'ca-sbx-docker-config-'));
});
afterEach(() => rmSync(config, { recursive: true, force: true }));

describe('resolveEndpoint: the CLI order', () => {
  it('defaults to the local socket, and tells the CLI so', () => {
    const endpoint = resolveEndpoint({ DOCKER_CONFIG: config });
    expect(endpoint.transport).toEqual({ kind: 'unix', socketPath: '/var/run/docker.sock' });
    expect(endpoint.source).toBe('default');
    expect(endpoint.cliEnv).toEqual({ DOCKER_HOST: 'unix:///var/run/docker.sock' });
  });

  it('uses currentContext of config.json (the known defect: it used to be ignored)', () => {
    writeContext('remote', 'tcp://10.1.2.3:2376', { tls: true });
    writeFileSync(join(config, 'config.json'), JSON.stringify({ currentContext: 'remote' }));
    const endpoint = resolveEndpoint({ DOCKER_CONFIG: config });
    expect(endpoint.source).toBe('context');
    expect(endpoint.context).toBe('remote');
    expect(endpoint.cliEnv).toEqual({ DOCKER_CONTEXT: 'remote' });
    expect(endpoint.transport).toMatchObject({ kind: 'tcp', host: '10.1.2.3', port: 2376 });
    const tls = (endpoint.transport as { tls?: { ca?: Buffer; verify: boolean } }).tls;
    expect(tls?.verify).toBe(true);
    expect(tls?.ca?.toString()).toBe('remote ca.pem');
  });

  it('DOCKER_CONTEXT beats currentContext, and DOCKER_HOST beats both', () => {
    writeContext('a', 'tcp://10.0.0.1:2375');
    writeContext('b', 'ssh://me@builder:2222', { skipTls: true });
    writeFileSync(join(config, 'config.json'), JSON.stringify({ currentContext: 'a' }));
    expect(resolveEndpoint({ DOCKER_CONFIG: config, DOCKER_CONTEXT: 'b' }).transport).toEqual({
      kind: 'ssh',
      host: 'builder',
      user: 'me',
      port: 2222,
    });
    const env = resolveEndpoint({
      DOCKER_CONFIG: config,
      DOCKER_CONTEXT: 'b',
      DOCKER_HOST: 'unix:///run/d.sock',
    });
    expect(env.transport).toEqual({ kind: 'unix', socketPath: '/run/d.sock' });
    expect(env.cliEnv).toEqual({ DOCKER_HOST: 'unix:///run/d.sock' });
  });

  it('the context named default is the local socket; a missing context is a prerequisite error', () => {
    expect(resolveEndpoint({ DOCKER_CONFIG: config, DOCKER_CONTEXT: 'default' }).source).toBe('default');
    expect(() => resolveEndpoint({ DOCKER_CONFIG: config, DOCKER_CONTEXT: 'nope' })).toThrow(
      DockerUnavailableError,
    );
    writeFileSync(join(config, 'config.json'), '{not json');
    expect(resolveEndpoint({ DOCKER_CONFIG: config }).source).toBe('default');
  });

  it('DOCKER_TLS_VERIFY and DOCKER_CERT_PATH give tcp its TLS material', () => {
    for (const file of ['ca.pem', 'cert.pem', 'key.pem']) writeFileSync(join(config, file), file);
    const endpoint = resolveEndpoint({
      DOCKER_CONFIG: '/nonexistent',
      DOCKER_HOST: 'tcp://127.0.0.1:2376',
      DOCKER_TLS_VERIFY: '1',
      DOCKER_CERT_PATH: config,
    });
    expect(endpoint.transport).toMatchObject({ kind: 'tcp', host: '127.0.0.1', port: 2376 });
    const tls = (endpoint.transport as { tls?: { cert?: Buffer; verify: boolean } }).tls;
    expect(tls?.verify).toBe(true);
    expect(tls?.cert?.toString()).toBe('cert.pem');
    expect(endpoint.cliEnv).toEqual({
      DOCKER_HOST: 'tcp://127.0.0.1:2376',
      DOCKER_TLS_VERIFY: '1',
      DOCKER_CERT_PATH: config,
    });
  });

  it('reads docker host syntax and refuses what it cannot use', () => {
    expect(parseEngineHost('tcp://[::1]:2375')).toEqual({ kind: 'tcp', host: '::1', port: 2375 });
    expect(parseEngineHost('tcp://example')).toEqual({ kind: 'tcp', host: 'example', port: 2375 });
    expect(parseEngineHost('ssh://host')).toEqual({ kind: 'ssh', host: 'host' });
    expect(() => parseEngineHost('npipe:////./pipe/docker_engine')).toThrow(DockerUnavailableError);
    expect(() => parseEngineHost('unix://relative.sock')).toThrow(DockerUnavailableError);
  });
});
