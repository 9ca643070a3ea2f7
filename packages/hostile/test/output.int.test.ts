import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  cli,
  createBox,
  destroyBox,
  destroyLeftovers,
  execBox,
  FIXTURES,
  RUNTIMES,
  type SandboxRecord,
} from './_harness.js';

/** Bytes that drive a terminal: ESC, C1 controls (raw or UTF-8 encoded) and bidi overrides. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching terminal controls is the point
const TERMINAL_CONTROL = /[\u001b\u0080-\u009f\u202a-\u202e\u2066-\u2069]/u;

describe('hostile output', () => {
  let box: SandboxRecord;
  beforeAll(async () => {
    box = await createBox(join(FIXTURES, 'output'));
  });
  afterAll(async () => {
    if (box) await destroyBox(box.id);
    await destroyLeftovers();
  });

  it('ANSI, OSC 52, OSC 8, C1, bidi and invalid UTF-8 on stdout and stderr are escaped in the exec JSON', async () => {
    const result = await cli(['exec', box.id, '--json', '--', 'sh', 'noisy.sh']);
    expect(result.exitCode).toBe(0);
    // The raw bytes the terminal receives hold no control at all...
    expect(result.stdoutBytes.includes(0x1b)).toBe(false);
    expect(TERMINAL_CONTROL.test(result.stdout)).toBe(false);
    expect(result.stdout).not.toMatch(/[\u2028\u2029]/);
    // ...and the JSON still carries them, escaped, with invalid UTF-8 as U+FFFD.
    const parsed = JSON.parse(result.stdout) as { stdout: string; stderr: string };
    expect(parsed.stdout).toContain('\u001b]52;c;');
    expect(parsed.stdout).toContain('\u009b');
    expect(parsed.stdout).toContain('\ufffd');
    expect(parsed.stderr).toContain('\u001b[2J');
    expect(parsed.stderr).toContain('\ufffd');
  });

  it('hostile file names are escaped under --json and neutralised in human output', async () => {
    await execBox(box.id, ['sh', 'noisy.sh']);
    const names = await cli(['exec', box.id, '--json', '--', 'ls', 'names']);
    expect(TERMINAL_CONTROL.test(names.stdout)).toBe(false);
    const list = await cli(['list']);
    expect(list.exitCode).toBe(0);
    expect(TERMINAL_CONTROL.test(list.stdout)).toBe(false);
  });

  it('a repo name with terminal controls is neutralised in list and errors', async () => {
    const result = await cli(['verify', `\u001b]52;c;cHduZWQ=\u0007${box.id}`]);
    expect(result.exitCode).not.toBe(0);
    expect(TERMINAL_CONTROL.test(result.stderr)).toBe(false);
    expect(result.stderr).not.toContain('\u0007');
  });
});

describe.each(RUNTIMES)('a box that prints the engine start-failure words (%s)', (runtime) => {
  let box: SandboxRecord;
  // What the engine writes when it cannot start a process; here the box's own command prints it.
  const words = 'OCI runtime exec failed: exec failed: executable file not found in $PATH: unknown';
  const fake = ['sh', '-c', `printf '%s\\r\\n' '${words}'; printf '\\033]52;c;cHduZWQ=\\007'; exit 127`];
  beforeAll(async () => {
    box = await createBox(join(FIXTURES, 'output'), { runtime });
  });
  afterAll(async () => {
    if (box) await destroyBox(box.id);
    await destroyLeftovers();
  });

  it('keeps its output and exit code: it is never taken for a command that did not start', async () => {
    const raw = await cli(['exec', box.id, '--', ...fake]);
    expect(raw).toMatchObject({ exitCode: 127, stderr: '' });
    // Into a pipe: the box's raw bytes, as docker exec gives them.
    expect(raw.stdout).toBe(`${words}\r\n\u001b]52;c;cHduZWQ=\u0007`);
    const json = await execBox(box.id, fake);
    expect(json).toMatchObject({ exitCode: 127, stdout: `${words}\r\n\u001b]52;c;cHduZWQ=\u0007` });
  });

  it('a command that really did not start is our one error line, the engine text nowhere', async () => {
    const missing = await cli(['exec', box.id, '--', 'no-such-command']);
    expect(missing).toMatchObject({ exitCode: 127, stdout: '' });
    expect(missing.stderr.split('\n')[0]).toBe('error: command not found in the box: no-such-command');
    expect(missing.stderr).not.toContain('OCI');
  });
});
