import { join } from 'node:path';
import { docker } from '@ca-sandbox/docker/cli';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BIN,
  cli,
  createBox,
  destroyBox,
  destroyLeftovers,
  execBox,
  FIXTURES,
  RUNTIMES,
  type SandboxRecord,
} from './_harness.js';
import { PtySession } from './_pty.js';

const OSC52 = '\u001b]52;';
const TITLE = '\u001b]0;';

/** A .bashrc/.profile the box plants in its HOME (/tmp): a clipboard write and a fake host prompt. */
const PLANT = [
  `printf '%s\\n' 'printf "\\033]52;c;cm0gLXJmIH4K\\007\\033]0;root@host\\007"' 'PS1="root@host:~# "' 'echo STARTUP-FILE-RAN' > /tmp/.bashrc`,
  'cp /tmp/.bashrc /tmp/.profile',
  'cp /tmp/.bashrc /tmp/.bash_profile',
  `printf '%s\\n' '"\\C-l": "echo INPUTRC-RAN\\n"' > /tmp/.inputrc`,
].join('; ');

describe.each(RUNTIMES)('the host terminal under %s', (runtime) => {
  let box: SandboxRecord;
  beforeAll(async () => {
    box = await createBox(join(FIXTURES, 'output'), { runtime });
  });
  afterAll(async () => {
    if (box) await destroyBox(box.id);
    await destroyLeftovers();
  });

  it('shell reads no start-up file the box planted, filters clipboard and title writes, and names the sandbox', async () => {
    const planted = await execBox(box.id, ['/bin/sh', '-c', PLANT]);
    expect(planted.exitCode).toBe(0);
    const shell = new PtySession(['shell', box.id]);
    await shell.waitFor(new RegExp(`\\[sandbox ${box.id}\\] /work/repo \\$ `));
    shell.type(
      'printf "\\033]52;c;eA==\\007\\033]0;owned\\007\\033[32mafter-osc\\033[0m\\n"; command -v sh grep; exit 7\n',
    );
    expect(await shell.exit()).toBe(7);
    const text = shell.text;
    // Our frame, written on the host: which sandbox, its network, how to leave, and the way out.
    expect(text).toContain(`ca-sandbox: shell in sandbox ${box.id}`);
    expect(text).toContain('network offline');
    expect(text).toMatch(/leave with exit or Ctrl-D/);
    expect(text).toContain(`ca-sandbox: left sandbox ${box.id}`);
    // Nothing the box planted ran, and nothing it printed reached the terminal as a control string.
    expect(text).not.toContain('STARTUP-FILE-RAN');
    expect(text).not.toContain('root@host');
    expect(text).not.toContain(OSC52);
    expect(text).not.toContain(TITLE);
    // Colours still work, and sh and grep are the system's.
    expect(text).toContain('\u001b[32mafter-osc\u001b[0m');
    expect(text).toMatch(/^\/(usr\/)?bin\/sh\r?$/m);
  });

  it('ANSI modes the end-of-session reset cannot undo never reach the terminal (keyboard lock, local echo, newline)', async () => {
    const modes = ['\u001b[2h', '\u001b[12l', '\u001b[20h', '\u001b[4;12l'];
    const shell = new PtySession(['shell', box.id]);
    await shell.waitFor(new RegExp(`\\[sandbox ${box.id}\\] /work/repo \\$ `));
    shell.type('printf "\\033[2hA\\033[12lB\\033[20hC\\033[4;12lD\\033[4hE\\033[4l-modes-done\\n"; exit 5\n');
    expect(await shell.exit()).toBe(5);
    expect(shell.text).toContain('ABCD\u001b[4hE\u001b[4l-modes-done');
    for (const mode of modes) expect(shell.text).not.toContain(mode);
    const exec = new PtySession([
      'exec',
      box.id,
      '--',
      '/bin/sh',
      '-c',
      'printf "\\033[12lx\\033[2hy\\033[20hz\\n"',
    ]);
    expect(await exec.exit()).toBe(0);
    expect(exec.text).toContain('xyz');
    for (const mode of modes) expect(exec.text).not.toContain(mode);
  });

  it('the shell follows the terminal size; SIGTERM to the CLI ends it with 143, kills what it started in the box, and the terminal is no longer raw', async () => {
    const prompt = new RegExp(`\\[sandbox ${box.id}\\] /work/repo \\$ `);
    // `stty -a` in the same terminal once the bin has gone: `-icanon` would mean it was left raw.
    const shell = new PtySession(['shell', box.id], {
      rows: 30,
      columns: 100,
      after: 'echo "bin-exit=$?"; stty -a',
    });
    await shell.waitFor(prompt);
    shell.type('stty size\n');
    await shell.waitFor(/^30 100\r?$/m);
    shell.resize(41, 133);
    // The resize reaches the box through the engine; ask until the shell sees it.
    const deadline = Date.now() + 20_000;
    while (!/^41 133\r?$/m.test(shell.text) && Date.now() < deadline) {
      shell.type('stty size\n');
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    expect(shell.text).toMatch(/^41 133\r?$/m);
    // A background job, a detached session and a foreground command: the engine would keep all
    // three running after the client is gone.
    shell.type('sleep 341 & setsid sleep 342 & echo jobs-started; sleep 343\n');
    await shell.waitFor(/^jobs-started\r?$/m);
    process.kill(shell.binPid(), 'SIGTERM');
    await shell.waitFor(/bin-exit=\d+/);
    await shell.exit();
    expect(shell.text).toMatch(/bin-exit=143/);
    const ps = await execBox(box.id, ['/bin/ps', '-eo', 'args']);
    expect(ps.stdout).not.toMatch(/sleep 34[1-3]|bash --norc/);
    expect(shell.text).toContain(`ca-sandbox: left sandbox ${box.id}`);
    expect(shell.text).toMatch(/(?:^|\s)icanon(?:\s|$)/m);
    expect(shell.text).toMatch(/(?:^|\s)echo(?:\s|$)/m);
  });

  it('exec on a terminal streams each line as it comes, control strings filtered, colours kept', async () => {
    const exec = new PtySession([
      'exec',
      box.id,
      '--',
      '/bin/sh',
      '-c',
      'echo first; printf "\\033]52;c;eA==\\007\\033[31mred\\033[0m\\n"; sleep 4; echo second; exit 3',
    ]);
    await exec.waitFor(/first/);
    // The command is still sleeping: what it printed so far is already on the terminal.
    expect(exec.text).not.toContain('second');
    expect(await exec.exit()).toBe(3);
    expect(exec.text).toMatch(/first[\s\S]*red[\s\S]*second/);
    expect(exec.text).toContain('\u001b[31mred');
    expect(exec.text).not.toContain(OSC52);
  });

  it('Ctrl-C stops the command inside the box, forked children included, and exits 130', async () => {
    const exec = new PtySession([
      'exec',
      box.id,
      '--',
      '/bin/sh',
      '-c',
      'sleep 311 & setsid sleep 312 & echo started; sleep 313',
    ]);
    await exec.waitFor(/started/);
    exec.type('\u0003');
    expect(await exec.exit()).toBe(130);
    expect(exec.text).toMatch(/interrupted \(SIGINT\): the command was stopped inside the box/);
    const ps = await execBox(box.id, ['/bin/ps', '-eo', 'args']);
    expect(ps.stdout).not.toMatch(/sleep 31[1-3]/);
  });

  it('SIGTERM to the CLI stops the command inside the box and exits 143', async () => {
    const child = execa(
      process.execPath,
      [BIN, 'exec', box.id, '--', '/bin/sh', '-c', 'echo up; sleep 321'],
      {
        reject: false,
        stdin: 'ignore',
        env: { NO_COLOR: '1' },
      },
    );
    await new Promise<void>((resolve) =>
      child.stdout?.on('data', (chunk: Buffer) => {
        if (chunk.toString().includes('up')) resolve();
      }),
    );
    child.kill('SIGTERM');
    const result = await child;
    expect(result.exitCode).toBe(143);
    const ps = await execBox(box.id, ['/bin/ps', '-eo', 'args']);
    expect(ps.stdout).not.toMatch(/sleep 321/);
  });

  it('data on stdin is refused, not dropped, and the command never runs', async () => {
    const piped = await execa(
      process.execPath,
      [BIN, 'exec', box.id, '--', '/bin/sh', '-c', 'cat > /tmp/copied-in; echo ran'],
      { reject: false, input: 'host data\n', env: { NO_COLOR: '1' } },
    );
    expect(piped.exitCode).toBe(125);
    expect(piped.stderr).toMatch(/does not forward stdin \(there is no copy-in, by design\)/);
    expect(piped.stdout).toBe('');
    expect((await execBox(box.id, ['/bin/ls', '/tmp/copied-in'])).exitCode).not.toBe(0);
    // A shell needs a terminal: a pipe is refused too.
    const shell = await execa(process.execPath, [BIN, 'shell', box.id], {
      reject: false,
      input: 'touch /tmp/copied-in\n',
      env: { NO_COLOR: '1' },
    });
    expect(shell.exitCode).toBe(2);
    expect(shell.stderr).toMatch(/shell needs a terminal/);
    expect((await execBox(box.id, ['/bin/ls', '/tmp/copied-in'])).exitCode).not.toBe(0);
  });

  it('start re-runs the isolation gate: a box tampered with while stopped stays stopped', async () => {
    expect((await cli(['stop', box.id])).exitCode).toBe(0);
    await docker(['update', '--pids-limit', '-1', box.container]);
    const refused = await cli(['start', box.id, '--json']);
    expect(refused.exitCode).toBe(1);
    expect((JSON.parse(refused.stderr) as { error: { code: string } }).error.code).toBe(
      'ISOLATION_VIOLATION',
    );
    const state = await docker(['inspect', '--format', '{{.State.Running}}', box.container]);
    expect(state.stdout.trim()).toBe('false');
    await docker(['update', '--pids-limit', '512', box.container]);
    expect((await cli(['start', box.id])).exitCode).toBe(0);
    expect((await execBox(box.id, ['/bin/true'])).exitCode).toBe(0);
  });
});

describe.each(RUNTIMES)('dependency bins that shadow system commands, under %s', (runtime) => {
  let box: SandboxRecord;
  beforeAll(async () => {
    box = await createBox(join(FIXTURES, 'path-shadow'), { runtime, network: 'clone-then-cut' });
  });
  afterAll(async () => {
    if (box) await destroyBox(box.id);
    await destroyLeftovers();
  });

  it('the timeout kill does not run the sh and grep a dependency ships', async () => {
    // The fixture's install put sh and grep first on the box PATH: each logs its use and does nothing.
    const shadowed = await execBox(box.id, ['/usr/bin/env', 'sh', '-c', 'true']);
    expect(shadowed.exitCode).toBe(1);
    await execBox(box.id, ['/bin/rm', '-f', '/tmp/shadow-ran']);
    const timed = await execBox(box.id, ['sleep', '77'], ['--timeout', '2']);
    expect(timed).toMatchObject({ timedOut: true, exitCode: 124 });
    const ps = await execBox(box.id, ['/bin/ps', '-eo', 'args']);
    expect(ps.stdout).not.toMatch(/sleep 77/);
    // Neither planted bin ran for our kill.
    const log = await execBox(box.id, ['/bin/cat', '/tmp/shadow-ran']);
    expect(log.exitCode).not.toBe(0);
  });

  it('the shell finds the system sh and grep first, the dependency bins after', async () => {
    const shell = new PtySession(['shell', box.id]);
    await shell.waitFor(/\[sandbox [^\]]+\] \/work\/repo \$ /);
    shell.type('command -v sh grep; echo "path=$PATH"; exit\n');
    expect(await shell.exit()).toBe(0);
    expect(shell.text).toMatch(/^\/(usr\/)?bin\/sh\r?$/m);
    expect(shell.text).toMatch(/^\/(usr\/)?bin\/grep\r?$/m);
    // The system directories first; then the repo's pinned package manager, the dependency bins
    // (under runc the repo view's, real folders of the project; gVisor's links into the image),
    // the corepack launcher (through the box's writable view of its image under runc) and where
    // `corepack enable` puts its shims (tmpfs).
    const deps = runtime === 'runc' ? '/.ca-sbx-image/deps' : '/deps';
    const bins = runtime === 'runc' ? '/work/repo/node_modules/.bin' : '/deps/node_modules/.bin';
    const path = `/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:${deps}/pm/bin:${bins}:${deps}/.ca-sbx/bin:/tmp/.local/bin`;
    // The terminal ends a line with \r\r\n.
    expect(
      shell.text.split('\n').filter((line) => line.replace(/\r+$/, '').endsWith(`path=${path}`)),
    ).toHaveLength(1);
    const log = await execBox(box.id, ['/bin/cat', '/tmp/shadow-ran']);
    expect(log.exitCode).not.toBe(0);
  });

  it('exec -e and -w reach the command; our own and proxy variables are refused', async () => {
    const result = await execBox(box.id, ['/usr/bin/env'], ['-e', 'GREETING=hello world', '-w', '/tmp']);
    expect(result.stdout).toContain('GREETING=hello world\n');
    const pwd = await execBox(box.id, ['/bin/pwd'], ['-w', 'node_modules/..']);
    expect(pwd.stdout).toBe('/work/repo\n');
    for (const name of ['CA_SBX_EXEC', 'HTTPS_PROXY', 'no_proxy']) {
      const refused = await cli(['exec', box.id, '-e', `${name}=x`, '--', '/bin/true']);
      expect(refused.exitCode).toBe(125);
    }
  });
});
