import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { labelInstruction } from './image-toolchain.js';
import {
  formatToolchain,
  parseToolchain,
  TOOLCHAIN_MARKER,
  TOOLCHAIN_PROBE,
  toolchainFromOutput,
  toolchainProbe,
} from './toolchain.js';

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

  it('takes the last marked line of the build output (the probe runs after the install)', () => {
    const lines = [
      `${TOOLCHAIN_MARKER}node=1.0.0,`, // printed by an install script: earlier, so not taken
      'added 3 packages in 1s',
      `${TOOLCHAIN_MARKER}node=22.23.5,pnpm=9.15.0,`,
      'Successfully built 0123',
    ];
    expect(toolchainFromOutput(lines)).toEqual({ node: '22.23.5', pnpm: '9.15.0' });
    expect(toolchainFromOutput(['no marker'])).toEqual({});
  });
});

describe('the toolchain probe (sh, tools asked in parallel)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ca-probe-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('writes one marked line, in tool order whatever order the tools answer in, with extra pairs at its end', () => {
    // Only fake tools and the utilities the probe needs: no tool of this machine answers.
    const bin = join(dir, 'bin');
    execFileSync('mkdir', ['-p', bin]);
    for (const util of ['mktemp', 'sed', 'head', 'cut', 'cat', 'rm', 'sleep']) {
      const path = execFileSync('sh', ['-c', `command -v ${util}`], { encoding: 'utf8' }).trim();
      symlinkSync(path, join(bin, util));
    }
    const tool = (name: string, body: string) => {
      writeFileSync(join(bin, name), `#!/bin/sh\n${body}\n`);
      chmodSync(join(bin, name), 0o755);
    };
    // node answers last: the line still starts with it.
    tool('node', 'sleep 0.3; echo v22.23.5');
    tool('npm', 'echo 10.9.9');
    tool('yarn', 'echo "1.22.22 extra words"; echo second line');
    tool('pnpm', 'exit 1');
    const run = (script: string) =>
      execFileSync('/bin/sh', ['-c', `set -eu\nca_sbx_claude=2.1.0\n${script}`], {
        encoding: 'utf8',
        env: { PATH: bin },
      });
    expect(run(TOOLCHAIN_PROBE)).toBe(`${TOOLCHAIN_MARKER}node=22.23.5,npm=10.9.9,yarn=1.22.22,\n`);
    // It waits for its own jobs only, never for another child of the shell.
    const started = Date.now();
    const other = `sleep 20 >/dev/null 2>&1 &\nother=$!\n${TOOLCHAIN_PROBE}\nkill $other`;
    expect(run(other)).toContain('npm=10.9.9');
    expect(Date.now() - started).toBeLessThan(10_000);
    const withClaude = run(toolchainProbe(['printf "%s=%s," claude "$ca_sbx_claude"']));
    expect(toolchainFromOutput(withClaude.split('\n'))).toEqual({
      node: '22.23.5',
      npm: '10.9.9',
      yarn: '1.22.22',
      claude: '2.1.0',
    });
  });
});

describe('labelInstruction (the labels of a deps image, one step)', () => {
  it('quotes every value so the Dockerfile substitutes nothing, and refuses what a line cannot hold', () => {
    expect(
      labelInstruction({
        'ca.sandbox.cache': '1',
        'ca.sandbox.cache.source': '/home/a b/"x"/$HOME\\y',
      }),
    ).toBe('LABEL ca.sandbox.cache="1" ca.sandbox.cache.source="/home/a b/\\"x\\"/\\$HOME\\\\y"');
    expect(() => labelInstruction({ 'ca.sandbox.cache.source': 'a\nRUN id' })).toThrow(/control character/);
    expect(() => labelInstruction({ 'x y': '1' })).toThrow(/invalid label name/);
    expect(() => labelInstruction({})).toThrow(/no label/);
  });
});
