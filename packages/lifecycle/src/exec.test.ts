import { Readable } from 'node:stream';
import { SYSTEM_PATH } from '@ca-sandbox/docker';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  buildExecArgs,
  buildKillArgs,
  captureCapped,
  decodeUtf8,
  resolveExecOptions,
  trimPartialUtf8,
} from './exec.js';

describe('buildExecArgs', () => {
  it('runs as 1000:1000 at /work/repo, the command after the container', () => {
    expect(buildExecArgs('ca-sbx-a', ['ls', '-la'])).toEqual([
      'exec',
      '-u',
      '1000:1000',
      '-w',
      '/work/repo',
      'ca-sbx-a',
      'ls',
      '-la',
    ]);
  });

  it('never privileged, never root, never a TTY, whatever the command (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.string(), { minLength: 1 }),
        fc.option(fc.stringMatching(/^[0-9a-f]{1,16}$/)),
        (argv, marker) => {
          const args = buildExecArgs('ca-sbx-a', argv, marker ?? undefined);
          const options = args.slice(0, args.indexOf('ca-sbx-a'));
          expect(options).not.toContain('--privileged');
          expect(options).not.toContain('-t');
          expect(options).not.toContain('-i');
          expect(options[options.indexOf('-u') + 1]).toBe('1000:1000');
          expect(options.filter((o) => o === '-u' || o.startsWith('--user'))).toEqual(['-u']);
          expect(args.slice(args.indexOf('ca-sbx-a') + 1)).toEqual(argv);
        },
      ),
    );
  });

  it('a timeout marker goes in the environment, not the command', () => {
    const args = buildExecArgs('ca-sbx-a', ['sleep', '9'], 'abc123');
    expect(args).toContain('CA_SBX_EXEC=abc123');
    expect(args.slice(-2)).toEqual(['sleep', '9']);
  });

  it('the caller env and workdir go on the exec; the marker comes last so it cannot be overridden', () => {
    const args = buildExecArgs('ca-sbx-a', ['env'], 'm1', { env: { FOO: 'a=b' }, workdir: '/tmp' });
    expect(args).toEqual([
      'exec',
      '-u',
      '1000:1000',
      '-w',
      '/tmp',
      '-e',
      'FOO=a=b',
      '-e',
      'CA_SBX_EXEC=m1',
      'ca-sbx-a',
      'env',
    ]);
  });
});

describe('buildKillArgs', () => {
  it('runs /bin/sh and /bin/grep by path, PATH fixed, from an empty environment', () => {
    const kill = buildKillArgs('ca-sbx-a', 'abc123');
    expect(kill.slice(0, 6)).toEqual(['exec', '-u', '1000:1000', '-e', `PATH=${SYSTEM_PATH}`, 'ca-sbx-a']);
    expect(kill.slice(6, 8)).toEqual(['/usr/bin/env', '-i']);
    expect(kill).toContain('/bin/sh');
    const script = kill[kill.indexOf('/bin/sh') + 2] ?? '';
    expect(script).toContain('/bin/grep -qsxzF');
    expect(script).not.toMatch(/(^|[\s;])grep /);
    expect(kill.at(-1)).toBe('abc123');
  });
});

describe('resolveExecOptions', () => {
  it('defaults maxBytes to 1 MiB and /work/repo, and refuses unknown keys', () => {
    expect(resolveExecOptions({})).toEqual({ maxBytes: 1024 * 1024, workdir: '/work/repo' });
    expect(() => resolveExecOptions({ privileged: true })).toThrow(/invalid exec options/);
    expect(() => resolveExecOptions({ maxBytes: -1 })).toThrow(/invalid exec options/);
  });

  it('env: plain names, not ours, not a proxy variable, string values', () => {
    expect(resolveExecOptions({ env: { NODE_ENV: 'test', _x1: '' } }).env).toEqual({
      NODE_ENV: 'test',
      _x1: '',
    });
    for (const bad of [
      { '1X': 'a' },
      { 'A-B': 'a' },
      { CA_SBX_EXEC: 'x' },
      { ca_sandbox_config: 'x' },
      { HTTPS_PROXY: 'x' },
      { no_proxy: 'x' },
      { A: 1 },
    ]) {
      expect(() => resolveExecOptions({ env: bad })).toThrow();
    }
  });

  it('workdir: relative to /work/repo, normalised, anywhere in the box, no control characters', () => {
    expect(resolveExecOptions({ workdir: 'src' }).workdir).toBe('/work/repo/src');
    expect(resolveExecOptions({ workdir: '/tmp/../tmp/x/' }).workdir).toBe('/tmp/x');
    expect(resolveExecOptions({ workdir: '../..' }).workdir).toBe('/');
    expect(() => resolveExecOptions({ workdir: 'a\nb' })).toThrow(/working directory/);
    expect(() => resolveExecOptions({ workdir: '' })).toThrow(/working directory/);
  });
});

describe('captureCapped', () => {
  it('keeps at most max bytes, drains the rest and says truncated', async () => {
    const chunks = Array.from({ length: 100 }, () => Buffer.alloc(1000, 0x61));
    const result = await captureCapped(Readable.from(chunks), 2500);
    expect(result.data.length).toBe(2500);
    expect(result.total).toBe(100_000);
    expect(result.truncated).toBe(true);
  });

  it('not truncated at exactly max', async () => {
    const result = await captureCapped(Readable.from([Buffer.from('abc')]), 3);
    expect(result).toMatchObject({ truncated: false, total: 3 });
  });

  it('never cuts a UTF-8 character in half', async () => {
    const text = 'é'.repeat(10); // 2 bytes each
    const result = await captureCapped(Readable.from([Buffer.from(text)]), 5);
    expect(decodeUtf8(result.data)).toBe('éé');
  });
});

describe('utf-8', () => {
  it('invalid bytes become U+FFFD', () => {
    expect(decodeUtf8(Buffer.from([0x61, 0xff, 0xfe, 0x62]))).toBe('a\ufffd\ufffdb');
  });

  it('trimPartialUtf8 drops only a cut sequence, not bytes that are invalid anyway', () => {
    expect(trimPartialUtf8(Buffer.from([0x61, 0xe2, 0x82]))).toEqual(Buffer.from([0x61]));
    expect(trimPartialUtf8(Buffer.from([0x61, 0xff, 0xfe]))).toEqual(Buffer.from([0x61, 0xff, 0xfe]));
  });

  it('trimPartialUtf8 keeps complete text (property)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.nat(), (text, cut) => {
        const bytes = Buffer.from(text);
        const part = bytes.subarray(0, cut % (bytes.length + 1));
        const trimmed = trimPartialUtf8(part);
        expect(decodeUtf8(trimmed)).not.toMatch(/\ufffd$/);
        expect(part.length - trimmed.length).toBeLessThan(4);
      }),
    );
  });
});
