import { spawn } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { imageExists } from '@ca-sandbox/docker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { destroyAll, removeDir, tempDir, uniqueId } from '../test/helpers.js';
import { createSandbox } from './create/index.js';
import { CommandNotFoundError, ExecInterruptedError, SandboxNotFoundError } from './errors.js';
import { EXEC_TIMEOUT_EXIT_CODE, execInSandbox, streamExecInSandbox } from './exec.js';

const ready = await imageExists('ca-sbx-base:git').catch(() => false);
const created = new Set<string>();
let work: string;
let id: string;

beforeAll(async () => {
  if (!ready) return;
  work = await tempDir();
  await mkdir(join(work, 'src'));
  await writeFile(join(work, 'src', 'hello.txt'), 'hello\n');
  id = uniqueId(created);
  await createSandbox({ source: join(work, 'src'), name: id });
});
afterAll(async () => {
  await destroyAll(created);
  await removeDir(work);
});

describe.skipIf(!ready)('execInSandbox', () => {
  it('runs as 1000:1000 in /work/repo, stdout and stderr apart, the exit code passed through', async () => {
    const result = await execInSandbox(id, [
      'sh',
      '-c',
      'id -u; id -g; pwd; cat hello.txt; echo oops >&2; exit 42',
    ]);
    expect(result).toMatchObject({
      exitCode: 42,
      stdout: '1000\n1000\n/work/repo\nhello\n',
      stderr: 'oops\n',
      truncated: false,
      timedOut: false,
    });
    expect(result.durationMs).toBeGreaterThanOrEqual(0);
  });

  it('passes argv without a shell', async () => {
    const result = await execInSandbox(id, ['printf', '%s|', 'a b', '$(id)', ';rm -rf /', '-n']);
    expect(result.stdout).toBe('a b|$(id)|;rm -rf /|-n|');
  });

  it('a command that never started is an error of its own (127 not found, 126 cannot run), never output', async () => {
    await expect(execInSandbox(id, ['no-such-command-xyz'])).rejects.toMatchObject({
      code: 'COMMAND_NOT_FOUND',
      exitCode: 127,
      message: 'command not found in the box: no-such-command-xyz',
    });
    await expect(execInSandbox(id, ['/etc/passwd'])).rejects.toMatchObject({
      code: 'EXEC_START_FAILED',
      exitCode: 126,
      message: 'cannot run /etc/passwd in the box: permission denied',
    });
    await expect(execInSandbox(id, ['ls'], { workdir: 'no-such-dir' })).rejects.toMatchObject({
      code: 'EXEC_START_FAILED',
      message: 'working directory not usable in the box: /work/repo/no-such-dir (no such file or directory)',
    });
    // Streamed: the engine's own "OCI runtime exec failed" text never reaches the sinks.
    const stdout = new PassThrough();
    const chunks: Buffer[] = [];
    stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
    await expect(
      streamExecInSandbox(id, ['no-such-command-xyz'], { stdout, stderr: new PassThrough() }),
    ).rejects.toBeInstanceOf(CommandNotFoundError);
    expect(Buffer.concat(chunks).toString()).toBe('');
  });

  it("a command that prints the engine's start-failure words and exits 126 keeps its output and code", async () => {
    const words = 'OCI runtime exec failed: exec failed: executable file not found in $PATH: unknown';
    const alone = await execInSandbox(id, ['sh', '-c', `echo '${words}'; exit 126`]);
    expect(alone).toMatchObject({ exitCode: 126, stdout: `${words}\n` });
    const stdout = new PassThrough();
    const chunks: Buffer[] = [];
    stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
    const streamed = await streamExecInSandbox(id, ['sh', '-c', `echo '${words}'; sleep 0.2; echo after`], {
      stdout,
      stderr: new PassThrough(),
    });
    expect(streamed.exitCode).toBe(0);
    expect(Buffer.concat(chunks).toString()).toBe(`${words}\nafter\n`);
  });

  it('truncates big output at the cap, drains the rest, and stays valid JSON', async () => {
    const result = await execInSandbox(id, [
      'sh',
      '-c',
      'head -c 5000000 /dev/zero | tr "\\0" a; printf "\\377\\376"; head -c 3000000 /dev/zero | tr "\\0" b >&2',
    ]);
    expect(result.exitCode).toBe(0);
    expect(result.truncated).toBe(true);
    // The first quarter of the cap and the end (the invalid bytes the box printed last as U+FFFD),
    // with the gap's note between, all within the cap.
    expect(result.stdout.startsWith('a'.repeat(256 * 1024))).toBe(true);
    expect(result.stdout.endsWith(`${'a'.repeat(700 * 1024)}\ufffd\ufffd`)).toBe(true);
    expect(result.stdout).toMatch(/\[\.\.\. \d+ bytes left out here by ca-sandbox/);
    expect(Buffer.byteLength(result.stdout)).toBeLessThanOrEqual(1024 * 1024 + 4);
    expect(result.stderr.endsWith('b'.repeat(700 * 1024))).toBe(true);
    expect(Buffer.byteLength(result.stderr)).toBeLessThanOrEqual(1024 * 1024);
    expect(JSON.parse(JSON.stringify(result))).toEqual(result);
  });

  it('honours maxBytes and turns invalid UTF-8 into U+FFFD', async () => {
    const small = await execInSandbox(id, ['sh', '-c', 'printf "abc\\377\\376def"'], { maxBytes: 5 });
    expect(small).toMatchObject({ stdout: 'abc\ufffd\ufffd', truncated: true });
    const full = await execInSandbox(id, ['sh', '-c', 'printf "abc\\377def"']);
    expect(full).toMatchObject({ stdout: 'abc\ufffddef', truncated: false });
  });

  it('a timeout kills the command inside the box, forked and setsid children included', async () => {
    const result = await execInSandbox(
      id,
      ['sh', '-c', 'sleep 311 & setsid sleep 312 & (sleep 313 &) ; sleep 314'],
      { timeoutMs: 1500 },
    );
    expect(result).toMatchObject({ timedOut: true, exitCode: EXEC_TIMEOUT_EXIT_CODE });
    const ps = await execInSandbox(id, ['ps', '-eo', 'pid,args']);
    expect(ps.stdout).not.toMatch(/sleep 31[1-4]/);
  });

  it('a command that finishes before its timeout is not marked', async () => {
    const result = await execInSandbox(id, ['sh', '-c', 'echo quick'], { timeoutMs: 30_000 });
    expect(result).toMatchObject({ timedOut: false, exitCode: 0, stdout: 'quick\n' });
  });

  it('an unknown sandbox is SandboxNotFoundError; a command printing docker-like errors is not', async () => {
    await expect(execInSandbox('sbx-does-not-exist', ['true'])).rejects.toBeInstanceOf(SandboxNotFoundError);
    const fake = await execInSandbox(id, ['sh', '-c', 'echo "Error: No such container: x" >&2; exit 1']);
    expect(fake).toMatchObject({ exitCode: 1, stderr: 'Error: No such container: x\n' });
  });

  it('refuses an empty command and bad options', async () => {
    await expect(execInSandbox(id, [])).rejects.toThrow(/give a command/);
    await expect(execInSandbox(id, ['true'], { maxBytes: 0 })).rejects.toThrow(/invalid exec options/);
  });
});

describe.skipIf(!ready)('streamExecInSandbox', () => {
  it('writes stdout and stderr to the sinks as they come and returns the exit code', async () => {
    const out = new PassThrough();
    const err = new PassThrough();
    const seen: string[] = [];
    out.on('data', (chunk: Buffer) => seen.push(`out:${chunk}`));
    err.on('data', (chunk: Buffer) => seen.push(`err:${chunk}`));
    const result = await streamExecInSandbox(id, ['sh', '-c', 'echo one; echo two >&2; exit 6'], {
      stdout: out,
      stderr: err,
    });
    expect(result).toMatchObject({ exitCode: 6, timedOut: false });
    expect(seen.join('')).toContain('out:one\n');
    expect(seen.join('')).toContain('err:two\n');
  });

  it('an abort kills the command inside the box and throws ExecInterruptedError', async () => {
    const controller = new AbortController();
    const sink = new PassThrough();
    sink.resume();
    setTimeout(() => controller.abort('SIGTERM'), 1500);
    await expect(
      streamExecInSandbox(id, ['sh', '-c', 'sleep 331 & sleep 332'], {
        stdout: sink,
        stderr: sink,
        signal: controller.signal,
      }),
    ).rejects.toBeInstanceOf(ExecInterruptedError);
    const ps = await execInSandbox(id, ['ps', '-eo', 'args']);
    expect(ps.stdout).not.toMatch(/sleep 33[12]/);
  });
});

describe.skipIf(!ready)('openShell', () => {
  it('needs a terminal on stdin: a pipe is refused before the box is asked', async () => {
    const entry = new URL('../dist/index.js', import.meta.url).href;
    const child = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `const m = await import(${JSON.stringify(entry)}); try { await m.openShell(process.argv[1]); } catch (e) { console.log(e.code); process.exit(9); }`,
        id,
      ],
      { stdio: ['pipe', 'pipe', 'pipe'] },
    );
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stdin.end('echo hi; exit 7\n');
    const code = await new Promise((resolve) => child.once('exit', resolve));
    expect(code).toBe(9);
    expect(stdout.trim()).toBe('SHELL_NEEDS_TERMINAL');
  });
});
