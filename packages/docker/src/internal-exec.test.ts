import { describe, expect, it } from 'vitest';
import { internalExecArgs, SYSTEM_PATH } from './internal-exec.js';

describe('internalExecArgs', () => {
  it('fixes PATH on the exec and starts the program from an empty environment', () => {
    expect(
      internalExecArgs('ca-sbx-a', ['/bin/sh', '-c', 'true'], {
        user: '1000:1000',
        workdir: '/work/repo',
        env: { GIT_TERMINAL_PROMPT: '0' },
      }),
    ).toEqual([
      'exec',
      '-u',
      '1000:1000',
      '-w',
      '/work/repo',
      '-e',
      `PATH=${SYSTEM_PATH}`,
      'ca-sbx-a',
      '/usr/bin/env',
      '-i',
      `PATH=${SYSTEM_PATH}`,
      'HOME=/tmp',
      'GIT_TERMINAL_PROMPT=0',
      '/bin/sh',
      '-c',
      'true',
    ]);
    expect(SYSTEM_PATH).toBe('/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin');
  });

  it('passes stdin only when asked', () => {
    expect(internalExecArgs('c', ['/bin/tar', '-x'], { user: '1000:1000', stdin: true }).slice(0, 2)).toEqual(
      ['exec', '-i'],
    );
    expect(internalExecArgs('c', ['/bin/true'], { user: '1000:1000' }).slice(0, 2)).toEqual(['exec', '-u']);
  });

  it('refuses a program found through PATH and odd variable names', () => {
    expect(() => internalExecArgs('c', ['sh', '-c', 'true'], { user: '1000:1000' })).toThrow(/absolute/);
    expect(() => internalExecArgs('c', [], { user: '1000:1000' })).toThrow(/absolute/);
    expect(() => internalExecArgs('c', ['/bin/true'], { user: '1000:1000', env: { 'A=B': 'x' } })).toThrow(
      /variable name/,
    );
  });
});
