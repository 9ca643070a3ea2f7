import { Readable } from 'node:stream';
import { SYSTEM_PATH } from '@ca-sandbox/docker';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CommandNotFoundError } from './errors.js';
import {
  buildExecSpec,
  captureCapped,
  capturedText,
  decodeUtf8,
  omissionNote,
  resolveExecOptions,
  startFailureError,
  trimPartialUtf8,
} from './exec.js';
import { buildKillSpec } from './in-box-kill.js';

describe('buildExecSpec', () => {
  it('runs as 1000:1000 at /work/repo, the command as given', () => {
    expect(buildExecSpec(['ls', '-la'])).toEqual({
      cmd: ['ls', '-la'],
      user: '1000:1000',
      workdir: '/work/repo',
      env: [],
    });
  });

  it('always the box user, the argv untouched, whatever the command (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.string(), { minLength: 1 }),
        fc.option(fc.stringMatching(/^[0-9a-f]{1,16}$/)),
        (argv, marker) => {
          const spec = buildExecSpec(argv, marker ?? undefined);
          expect(spec.user).toBe('1000:1000');
          expect(spec.cmd).toEqual(argv);
          expect(Object.keys(spec).sort()).toEqual(['cmd', 'env', 'user', 'workdir']);
        },
      ),
    );
  });

  it('the caller env and workdir go on the exec; the marker comes last so it cannot be overridden', () => {
    const spec = buildExecSpec(['env'], 'm1', { env: { FOO: 'a=b' }, workdir: '/tmp' });
    expect(spec).toEqual({
      cmd: ['env'],
      user: '1000:1000',
      workdir: '/tmp',
      env: ['FOO=a=b', 'CA_SBX_EXEC=m1'],
    });
  });
});

describe('buildKillSpec', () => {
  it('runs /bin/sh and /bin/grep by path, PATH fixed, from an empty environment', () => {
    const kill = buildKillSpec('abc123');
    expect(kill.user).toBe('1000:1000');
    expect(kill.env).toEqual([`PATH=${SYSTEM_PATH}`]);
    expect(kill.cmd.slice(0, 2)).toEqual(['/usr/bin/env', '-i']);
    expect(kill.cmd).toContain('/bin/sh');
    const script = kill.cmd[kill.cmd.indexOf('/bin/sh') + 2] ?? '';
    expect(script).toContain('/bin/grep -qsxzF');
    expect(script).not.toMatch(/(^|[\s;])grep /);
    expect(kill.cmd.at(-1)).toBe('abc123');
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
  it('keeps the start and the end within max bytes, drains the rest and says truncated', async () => {
    const chunks = Array.from({ length: 100 }, (_, i) => Buffer.alloc(1000, 0x61 + (i % 26)));
    const result = await captureCapped(Readable.from(chunks), 2500);
    expect(result.total).toBe(100_000);
    expect(result.truncated).toBe(true);
    const text = capturedText(result);
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(2500);
    // The first quarter of the cap from the start, the rest from the end (chunk 99 is 'v').
    expect(text.startsWith('a'.repeat(625))).toBe(true);
    expect(text.endsWith('v'.repeat(1000))).toBe(true);
    expect(text).toContain(`[... ${result.omitted} bytes left out here by ca-sandbox`);
    expect(result.data.length + (result.tail?.length ?? 0) + result.omitted).toBe(100_000);
  });

  it('not truncated at exactly max, in any chunking', async () => {
    const result = await captureCapped(Readable.from([Buffer.from('abc')]), 3);
    expect(result).toMatchObject({ truncated: false, total: 3, omitted: 0 });
    const split = await captureCapped(
      Readable.from(['x'.repeat(300), 'y'.repeat(100)].map((t) => Buffer.from(t))),
      400,
    );
    expect(capturedText(split)).toBe(`${'x'.repeat(300)}${'y'.repeat(100)}`);
  });

  it('below 256 bytes of cap keeps the start only', async () => {
    const result = await captureCapped(Readable.from([Buffer.from('abcdef')]), 4);
    expect(capturedText(result)).toBe('abcd');
    expect(result).toMatchObject({ truncated: true, omitted: 2 });
  });

  it('never cuts a UTF-8 character in half, at the start or the end', async () => {
    const text = 'é'.repeat(10); // 2 bytes each
    const result = await captureCapped(Readable.from([Buffer.from(text)]), 5);
    expect(decodeUtf8(result.data)).toBe('éé');
    const long = await captureCapped(Readable.from([Buffer.from('é'.repeat(1000))]), 301);
    expect(capturedText(long)).not.toContain('\ufffd');
    expect(Buffer.byteLength(capturedText(long))).toBeLessThanOrEqual(301);
  });

  it('keeps any stream within max bytes and its ends intact (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.uint8Array({ maxLength: 700 }), { maxLength: 12 }),
        fc.integer({ min: 1, max: 3000 }),
        async (parts, max) => {
          const bytes = Buffer.concat(parts.map((part) => Buffer.from(part)));
          const result = await captureCapped(Readable.from(parts.map((part) => Buffer.from(part))), max);
          expect(result.total).toBe(bytes.length);
          const kept = result.data.length + (result.tail?.length ?? 0);
          expect(kept + result.omitted).toBe(bytes.length);
          if (!result.truncated) {
            expect(result.data.equals(bytes)).toBe(true);
            return;
          }
          expect(bytes.subarray(0, result.data.length).equals(result.data)).toBe(true);
          if (result.tail) {
            expect(bytes.subarray(bytes.length - result.tail.length).equals(result.tail)).toBe(true);
            expect(kept + Buffer.byteLength(omissionNote(result.omitted))).toBeLessThanOrEqual(max);
          } else expect(result.data.length).toBeLessThanOrEqual(max);
        },
      ),
    );
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

describe('startFailureError', () => {
  const runc = (detail: string) =>
    `OCI runtime exec failed: exec failed: unable to start container process: ${detail}: unknown\r\n`;

  it('a program the box does not have is COMMAND_NOT_FOUND (127), named from our argv', () => {
    const error = startFailureError(
      runc('exec: "nosuch": executable file not found in $PATH'),
      ['nosuch', '-x'],
      '/work/repo',
    );
    expect(error).toBeInstanceOf(CommandNotFoundError);
    expect(error).toMatchObject({ exitCode: 127, message: 'command not found in the box: nosuch' });
    expect(
      startFailureError(
        runc('exec: "/opt/x": stat /opt/x: no such file or directory'),
        ['/opt/x'],
        '/work/repo',
      ),
    ).toBeInstanceOf(CommandNotFoundError);
  });

  it('anything else is EXEC_START_FAILED (126): a file it cannot run, a working directory it cannot enter', () => {
    expect(
      startFailureError(runc('exec: "/etc/passwd": permission denied'), ['/etc/passwd'], '/work/repo'),
    ).toMatchObject({
      code: 'EXEC_START_FAILED',
      exitCode: 126,
      message: 'cannot run /etc/passwd in the box: permission denied',
    });
    expect(
      startFailureError(
        runc('chdir to cwd ("/work/repo/x") set in config.json failed: no such file or directory'),
        ['ls'],
        '/work/repo/x',
      ),
    ).toMatchObject({
      code: 'EXEC_START_FAILED',
      message: 'working directory not usable in the box: /work/repo/x (no such file or directory)',
    });
    expect(startFailureError('something new', ['ls'], '/work/repo')).toMatchObject({
      code: 'EXEC_START_FAILED',
      message: 'cannot run ls in the box',
    });
  });

  it('repeats no text of the engine beyond a known reason, and escapes our argv', () => {
    const error = startFailureError(
      runc('\u001b]52;c;aGk=\u0007 permission denied'),
      ['a\u001b[2Jb'],
      '/work/repo',
    );
    expect(error.message).toBe('cannot run a\\x1b[2Jb in the box: permission denied');
  });
});
