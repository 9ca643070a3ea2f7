import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CLAUDE_KEY_PLACEHOLDER,
  claudeKeyEnv,
  credentialsFromLabel,
  parseCredentialSpec,
  readCredential,
} from './credentials.js';
import { resolveCreateOptions } from './options.js';

let dir = '';
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ca-credentials-'));
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('parseCredentialSpec', () => {
  it.each([
    [
      'api.example.com=env:TOKEN',
      { domain: 'api.example.com', header: 'authorization', bearer: true, source: 'env:TOKEN' },
    ],
    [
      'API.example.com=env:TOKEN',
      { domain: 'api.example.com', header: 'authorization', bearer: true, source: 'env:TOKEN' },
    ],
    [
      'api.example.com=file:/run/key',
      { domain: 'api.example.com', header: 'authorization', bearer: true, source: 'file:/run/key' },
    ],
    [
      'api.example.com=file:./key,header=X-Api-Key',
      { domain: 'api.example.com', header: 'x-api-key', bearer: false, source: 'file:/work/key' },
    ],
    [
      'api.example.com=env:GH,header=authorization',
      { domain: 'api.example.com', header: 'authorization', bearer: false, source: 'env:GH' },
    ],
  ])('%s', (text, spec) => {
    expect(parseCredentialSpec(text, '/work')).toEqual(spec);
  });

  it("fills a known API's own header by default (Anthropic: x-api-key), and the placeholder a --with-claude box holds", () => {
    const spec = parseCredentialSpec('api.anthropic.com=env:ANTHROPIC_API_KEY');
    expect(spec).toEqual({
      domain: 'api.anthropic.com',
      header: 'x-api-key',
      bearer: false,
      source: 'env:ANTHROPIC_API_KEY',
    });
    expect(claudeKeyEnv(true, [spec])).toEqual({ ANTHROPIC_API_KEY: CLAUDE_KEY_PLACEHOLDER });
    expect(claudeKeyEnv(false, [spec])).toEqual({});
    expect(claudeKeyEnv(true, [parseCredentialSpec('api.anthropic.com=env:T,header=authorization')])).toEqual(
      {},
    );
  });

  it('never shows what follows = (it may be the value, typed there by mistake)', () => {
    for (const text of [
      'api.example.com=sk-ant-secret-1',
      'api.example.com=env:sk-ant-secret-1',
      'api.example.com=ghp_secret1',
    ]) {
      let message = '';
      try {
        parseCredentialSpec(text);
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message).toMatch(/^invalid --credential for 'api\.example\.com': /);
      expect(message).not.toMatch(/secret/);
    }
  });

  it.each([
    ['api.example.com', /no <domain>=/],
    ['=env:X', /no <domain>=/],
    ['*.example.com=env:X', /one exact domain/],
    ['api.example.com:443=env:X', /one exact domain/],
    ['203.0.113.7=env:X', /one exact domain/],
    ['api.example.com=env:1X', /not a variable name/],
    ['api.example.com=TOKEN', /must start with env: or file:/],
    ['api.example.com=./key', /must start with env: or file:/],
    ['api.example.com=env:X,scheme=basic', /unknown option/],
    ['api.example.com=env:X,header=host', /frames or routes/],
  ])('refuses %s', (text, why) => {
    expect(() => parseCredentialSpec(text, '/work')).toThrow(why);
  });
});

describe('readCredential', () => {
  it('reads a variable, as a bearer token by default', () => {
    const spec = parseCredentialSpec('api.example.com=env:TOKEN');
    expect(readCredential(spec, { TOKEN: 'sk-1' })).toEqual({
      domain: 'api.example.com',
      header: 'authorization',
      value: 'Bearer sk-1',
    });
  });

  it("reads a file's first line, as is with a header named", async () => {
    const file = join(dir, 'key');
    await writeFile(file, 'token abc\nsecond line\n');
    const spec = parseCredentialSpec(`api.example.com=file:${file},header=authorization`);
    expect(readCredential(spec, {}).value).toBe('token abc');
  });

  it('says which source failed, never the value', async () => {
    const spec = parseCredentialSpec('api.example.com=env:TOKEN');
    expect(() => readCredential(spec, {})).toThrow(
      'the credential for api.example.com: the variable TOKEN is not set',
    );
    expect(() => readCredential(spec, { TOKEN: 'has"quote' })).toThrow(/printable ASCII/);
    expect(() => readCredential(spec, { TOKEN: 'has"quote' })).not.toThrow(/has"quote/);
    expect(() => readCredential(parseCredentialSpec(`api.example.com=file:${dir}`), {})).toThrow(
      /not a regular file/,
    );
    const locked = join(dir, 'missing');
    expect(() => readCredential(parseCredentialSpec(`api.example.com=file:${locked}`), {})).toThrow(/ENOENT/);
  });

  it('a label of another shape reads as none', () => {
    expect(credentialsFromLabel('not json')).toEqual([]);
    expect(credentialsFromLabel('[{"domain":1}]')).toEqual([]);
    expect(credentialsFromLabel(undefined)).toEqual([]);
  });
});

describe('resolveCreateOptions with credentials', () => {
  const base = { source: '/tmp/x', credentials: ['api.example.com=env:TOKEN'] };

  it('takes a credential for an allowed domain behind the gateway', () => {
    const resolved = resolveCreateOptions({ ...base, network: 'allowlist', allow: ['api.example.com:443'] });
    expect(resolved.credentials).toEqual([
      { domain: 'api.example.com', header: 'authorization', bearer: true, source: 'env:TOKEN' },
    ]);
  });

  it('gives a --with-claude box the configured Anthropic key source unless a credential names that API', () => {
    const env = { CA_SANDBOX_CLAUDE_KEY_SOURCE: 'env:MY_KEY' };
    expect(resolveCreateOptions({ source: '/tmp/x', withClaude: true }, env).credentials).toEqual([
      { domain: 'api.anthropic.com', header: 'x-api-key', bearer: false, source: 'env:MY_KEY' },
    ]);
    const own = resolveCreateOptions(
      {
        source: '/tmp/x',
        withClaude: true,
        credentials: ['api.anthropic.com=file:/run/key,header=authorization'],
      },
      env,
    );
    expect(own.credentials.map((spec) => spec.source)).toEqual(['file:/run/key']);
    expect(resolveCreateOptions({ source: '/tmp/x' }, env).credentials).toEqual([]);
  });

  it.each([
    [{ network: 'offline' }, /a box with --network offline reaches no API/],
    [{ network: 'clone-then-cut' }, /a box with --network clone-then-cut reaches no API/],
    [{ network: 'allowlist', allow: ['203.0.113.7'] }, /an allowlist of addresses has no gateway/],
    [{ network: 'allowlist', allow: ['other.example.com'] }, /not on the allowlist/],
  ])('refuses %j', (options, why) => {
    expect(() => resolveCreateOptions({ ...base, ...options })).toThrow(why);
  });
});
