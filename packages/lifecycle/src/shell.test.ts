import { SYSTEM_PATH } from '@ca-sandbox/docker';
import { describe, expect, it } from 'vitest';
import { buildShellSpec, shellEnvironment, shellPath } from './shell.js';

describe('buildShellSpec', () => {
  const env = shellEnvironment('demo', [], 'xterm');

  it('a TTY, the box user at /work/repo, PATH fixed, the launcher by path from an empty environment', () => {
    const spec = buildShellSpec('demo', env, { rows: 40, columns: 120 });
    expect(spec).toMatchObject({
      tty: true,
      stdin: true,
      user: '1000:1000',
      workdir: '/work/repo',
      env: [`PATH=${SYSTEM_PATH}`],
    });
    expect(spec.cmd.slice(0, 2)).toEqual(['/usr/bin/env', '-i']);
    const launcher = spec.cmd[spec.cmd.indexOf('/bin/sh') + 2] ?? '';
    expect(launcher).toContain('exec /bin/bash --norc --noprofile -i');
    expect(launcher).toContain('exec /bin/sh -i');
    expect(spec.cmd.slice(-4)).toEqual(['ca-sbx-shell', '40', '120', 'demo']);
    expect(spec.cmd).toContain('HOME=/tmp');
    expect(spec.cmd).not.toContain('root');
    expect(spec.user).not.toBe('root');
  });

  it('without a known size the launcher leaves the size alone', () => {
    expect(buildShellSpec('demo', env, undefined).cmd.slice(-3, -1)).toEqual(['', '']);
  });
});

describe('shellEnvironment', () => {
  it('drops what a shell acts on at start-up and sets our own prompt, PATH and HOME', () => {
    const env = shellEnvironment(
      'demo',
      [
        'PATH=/deps/node_modules/.bin:/usr/local/bin:/usr/bin:/bin',
        'BASH_ENV=/tmp/evil',
        'ENV=/tmp/evil',
        'BASH_FUNC_ls%%=() { echo pwned; }',
        'SHELLOPTS=xtrace',
        'PS4=$(touch /tmp/x)',
        'PROMPT_COMMAND=printf x',
        'HOME=/root',
        'NODE_PATH=/deps/node_modules',
        'LANG=C.UTF-8',
      ],
      'xterm-256color',
    );
    expect(env).toEqual({
      NODE_PATH: '/deps/node_modules',
      LANG: 'C.UTF-8',
      PATH: `${SYSTEM_PATH}:/deps/node_modules/.bin`,
      HOME: '/tmp',
      TERM: 'xterm-256color',
      PS1: '[sandbox demo] \\w \\$ ',
      HISTFILE: '/dev/null',
      INPUTRC: '/etc/inputrc',
    });
  });

  it('a TERM that is not a plain name becomes xterm-256color', () => {
    expect(shellEnvironment('d', [], 'xterm\u001b]52;c;x\u0007').TERM).toBe('xterm-256color');
    expect(shellEnvironment('d', [], undefined).TERM).toBe('xterm-256color');
  });
});

describe('shellPath', () => {
  it('system directories first; the image’s own absolute ones after, once each', () => {
    expect(shellPath('/deps/node_modules/.bin:.:bin:/usr/bin:/opt/go/bin:/opt/go/bin')).toBe(
      `${SYSTEM_PATH}:/deps/node_modules/.bin:/opt/go/bin`,
    );
    expect(shellPath(undefined)).toBe(SYSTEM_PATH);
  });
});
