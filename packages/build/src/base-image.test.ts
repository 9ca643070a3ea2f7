import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '@ca-sandbox/config';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_BASE_IMAGES, readExtraCa, resolveBaseImage } from './base-image.js';
import { BaseImageMissingError, BuildConfigError } from './errors.js';
import { resolvePrepareOptions } from './prepare-options.js';

const dir = mkdtempSync(join(tmpdir(), 'ca-sbx-build-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const config = join(dir, 'config.json');
writeFileSync(config, JSON.stringify({ baseImages: { node: 'cfg-node:1', go: 'cfg-go:1' } }));

describe('resolveBaseImage', () => {
  it('defaults to the official images', () => {
    // No configuration file: the user's own (setup.sh writes one) must not decide this test.
    const none = { XDG_CONFIG_HOME: join(dir, 'no-config'), HOME: join(dir, 'no-home') };
    expect(resolveBaseImage('node', { env: none })).toEqual({
      image: 'node:22-bookworm',
      source: 'default',
    });
    expect(DEFAULT_BASE_IMAGES).toEqual({
      node: 'node:22-bookworm',
      python: 'python:3.11-bookworm',
      go: 'golang:1.27-bookworm',
      rust: 'rust:1-slim-bookworm',
      plain: 'debian:bookworm-slim',
    });
  });

  it('applies flag > option map > provider env > global env > config > default', () => {
    const env = {
      CA_SANDBOX_BASE_IMAGE_NODE: 'env-node:1',
      CA_SANDBOX_BASE_IMAGE: 'env-all:1',
      CA_SANDBOX_CONFIG: config,
    };
    expect(resolveBaseImage('node', { baseImage: 'flag:1', baseImages: { node: 'opt:1' }, env }).image).toBe(
      'flag:1',
    );
    expect(resolveBaseImage('node', { baseImages: { node: 'opt:1' }, env }).image).toBe('opt:1');
    expect(resolveBaseImage('node', { env })).toEqual({ image: 'env-node:1', source: 'env' });
    expect(resolveBaseImage('python', { env })).toEqual({ image: 'env-all:1', source: 'env' });
    expect(resolveBaseImage('go', { env: { CA_SANDBOX_CONFIG: config } })).toEqual({
      image: 'cfg-go:1',
      source: 'file',
    });
    expect(resolveBaseImage('rust', { env: { CA_SANDBOX_CONFIG: config } }).source).toBe('default');
  });

  it('refuses image references that could inject into FROM or argv', () => {
    expect(() => resolveBaseImage('node', { baseImage: 'a\nRUN x', env: {} })).toThrow(BuildConfigError);
    expect(() => resolveBaseImage('node', { baseImage: '--help', env: {} })).toThrow(BuildConfigError);
    expect(() => resolveBaseImage('node', { env: { CA_SANDBOX_BASE_IMAGE_NODE: 'a b' } })).toThrow(
      ConfigError,
    );
  });

  it('reports a bad config file as a usage error', () => {
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, JSON.stringify({ baseImages: { node: 'x y' } }));
    const env = (file: string) => ({ env: { CA_SANDBOX_CONFIG: file } });
    expect(() => resolveBaseImage('node', env(bad))).toThrow(/config file .*: baseImages\.node: /);
    expect(() => resolveBaseImage('node', env(join(dir, 'missing.json')))).toThrow(/cannot read config file/);
    writeFileSync(bad, '{nope');
    expect(() => resolveBaseImage('node', env(bad))).toThrow(/not valid json/);
  });

  it('names the image and the way to provide it when missing', () => {
    const error = new BaseImageMissingError('node:22-bookworm-slim', 'node');
    expect(error).toMatchObject({ kind: 'prerequisite', code: 'BASE_IMAGE_MISSING' });
    expect(error.message).toContain('node:22-bookworm-slim');
    expect(error.hint).toContain('scripts/seed-images.sh');
    expect(error.hint).toContain('CA_SANDBOX_BASE_IMAGE_NODE');
  });

  it('does not send users to seed-images.sh for a provider it builds no image for (rust)', () => {
    const error = new BaseImageMissingError('rust:1-slim', 'rust');
    expect(error.hint).toMatch(/^scripts\/seed-images\.sh builds no rust image: build one/);
    expect(error.hint).toContain('CA_SANDBOX_BASE_IMAGE_RUST');
  });
});

describe('readExtraCa', () => {
  it('takes certificates only, never a private key', () => {
    const pem = join(dir, 'bundle.pem');
    const cert = '-----BEGIN CERTIFICATE-----\nQUJD\n-----END CERTIFICATE-----';
    writeFileSync(pem, `${cert}\n-----BEGIN PRIVATE KEY-----\nU0VDUkVU\n-----END PRIVATE KEY-----\n`);
    const out = readExtraCa(pem).toString();
    expect(out).toBe(`${cert}\n`);
    expect(out).not.toContain('PRIVATE');
    writeFileSync(pem, 'nothing here');
    expect(() => readExtraCa(pem)).toThrow(/no pem certificate/);
  });
});

describe('resolvePrepareOptions', () => {
  const base = { containerId: 'abc', repoName: 'r', source: '/src/r', policy: 'offline' };
  it('fills defaults and rejects unknown keys and bad values', () => {
    expect(resolvePrepareOptions(base).builder).toBe('auto');
    expect(() => resolvePrepareOptions({ ...base, extra: 1 })).toThrow(/invalid prepareImage option/);
    expect(() => resolvePrepareOptions({ ...base, policy: 'open' })).toThrow(/policy/);
    expect(() => resolvePrepareOptions({ ...base, containerId: '-x' })).toThrow(/containerid|containerId/i);
    expect(() => resolvePrepareOptions({ ...base, baseImages: { ruby: 'x' } })).toThrow(/baseImages/);
  });
});
