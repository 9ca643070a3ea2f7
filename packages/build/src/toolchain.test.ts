import { describe, expect, it } from 'vitest';
import { formatToolchain, parseToolchain, TOOLCHAIN_MARKER, toolchainFromOutput } from './toolchain.js';

describe('toolchain', () => {
  it('parses the label format and drops anything malformed', () => {
    expect(parseToolchain('node=22.23.5,npm=10.9.9,go=1.27.4,')).toEqual({
      node: '22.23.5',
      npm: '10.9.9',
      go: '1.27.4',
    });
    expect(parseToolchain('node=v22,x y=1,pip=23.0.1=2,UV=1,uv=\u001b[31m,evil=1;rm')).toEqual({});
    expect(parseToolchain(undefined)).toEqual({});
    expect(formatToolchain({ node: '22.23.5', npm: '10.9.9' })).toBe('node=22.23.5,npm=10.9.9');
  });

  it('takes the last marked line of the build output (the probe is the last step)', () => {
    const lines = [
      `${TOOLCHAIN_MARKER}node=1.0.0,`, // printed by an install script: earlier, so not taken
      'Step 9/10 : RUN ...',
      `${TOOLCHAIN_MARKER}node=22.23.5,pnpm=9.15.0,`,
      'Successfully built 0123',
    ];
    expect(toolchainFromOutput(lines)).toEqual({ node: '22.23.5', pnpm: '9.15.0' });
    expect(toolchainFromOutput(['no marker'])).toEqual({});
  });
});
