import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  dockerReachable,
  forceRemoveSandbox,
  LIFECYCLE_BUILT,
  remainingObjects,
  runBin,
  runBinInTerminal,
} from './_bin.js';

const READY = LIFECYCLE_BUILT && dockerReachable();
const DEAD_DOCKER = { DOCKER_HOST: 'unix:///nonexistent.sock' };

/** The error object of a --json failure (one JSON line on stderr). */
function jsonError(stderr: string): { code: string; message: string; hint?: string } {
  const lines = stderr.trim().split('\n');
  return (JSON.parse(lines.at(-1) ?? '{}') as { error: { code: string; message: string; hint?: string } })
    .error;
}

describe.skipIf(!READY)('ca-sandbox end to end through the bin (real engine)', () => {
  const id = `sbx-${randomUUID().slice(0, 8)}`;
  const work = mkdtempSync(join(tmpdir(), 'ca-sbx-cli-'));
  const repo = join(work, 'fixture-repo');

  beforeAll(() => {
    mkdirSync(join(repo, 'src'), { recursive: true });
    writeFileSync(join(repo, 'README.md'), '# fixture\nhello from the fixture\n');
    writeFileSync(join(repo, 'src', 'main.sh'), '#!/bin/sh\necho "main ran"\n');
  });

  afterAll(async () => {
    await runBin(['destroy', id]).catch(() => undefined);
    forceRemoveSandbox(id);
    rmSync(work, { recursive: true, force: true });
  });

  it('create --json prints the sandbox record', async () => {
    const result = await runBin(['create', repo, '--name', id, '--json', '--memory', '512m', '--cpus', '1']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const record = JSON.parse(result.stdout);
    expect(record).toMatchObject({ id, network: 'offline', runtime: 'runc', status: 'running' });
    // A plain tree under offline: the bare toolchain image, and the record says so.
    expect(record.depsInstalled).toBe(false);
    for (const key of [
      'container',
      'volume',
      'image',
      'imageCacheHit',
      'dephash',
      'builder',
      'provider',
      'depsInstalled',
      'toolchain',
      'repo',
      'source',
      'createdAt',
    ]) {
      expect(record).toHaveProperty(key);
    }
  });

  it('create refuses a second sandbox with the same name (exit 2)', async () => {
    const result = await runBin(['create', repo, '--name', id]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^error: .*already exists/m);
  });

  it('list --json includes it, list prints a table', async () => {
    const json = await runBin(['list', '--json']);
    expect(json.code).toBe(0);
    const records = JSON.parse(json.stdout) as { id: string }[];
    expect(records.map((r) => r.id)).toContain(id);
    const table = await runBin(['ls']);
    expect(table.stdout.split('\n')[0]).toMatch(/^ID\s+STATUS\s+NETWORK\s+RUNTIME\s+IMAGE\s+CREATED\s+REPO$/);
    expect(table.stdout).toMatch(new RegExp(`^${id}\\s+running\\s+offline\\s+runc`, 'm'));
  });

  it('exec streams the output and passes the exit code through; --json prints the exec contract', async () => {
    const streamed = await runBin(['exec', id, '--', 'sh', '-c', 'cat README.md; echo err >&2; exit 5']);
    expect(streamed).toMatchObject({
      code: 5,
      stdout: '# fixture\nhello from the fixture\n',
      stderr: 'err\n',
    });
    const ok = await runBin(['exec', id, '--json', '--', 'cat', 'README.md']);
    expect(ok.code).toBe(0);
    const result = JSON.parse(ok.stdout);
    expect(result).toMatchObject({
      exitCode: 0,
      stdout: '# fixture\nhello from the fixture\n',
      stderr: '',
      truncated: false,
      timedOut: false,
    });
    expect(typeof result.durationMs).toBe('number');

    const seven = await runBin(['exec', id, '--json', '--', 'sh', '-c', 'echo out; echo err >&2; exit 7']);
    expect(seven.code).toBe(7);
    expect(JSON.parse(seven.stdout)).toMatchObject({ exitCode: 7, stdout: 'out\n', stderr: 'err\n' });
  });

  it('exec escapes hostile output in its JSON', async () => {
    const hostile = await runBin([
      'exec',
      id,
      '--json',
      '--',
      'sh',
      '-c',
      'printf "\\033]0;pwned\\007\\302\\233 31m\\342\\200\\256x"',
    ]);
    expect(hostile.code).toBe(0);
    for (const raw of ['\u001b', '\u0007', '\u009b', '\u202e']) expect(hostile.stdout).not.toContain(raw);
    expect(JSON.parse(hostile.stdout).stdout).toBe('\u001b]0;pwned\u0007\u009b 31m\u202ex');
  });

  it('exec --timeout kills the command and reports timedOut', async () => {
    const result = await runBin(['exec', id, '--json', '--timeout', '1', '--', 'sleep', '30']);
    const parsed = JSON.parse(result.stdout);
    expect(parsed.timedOut).toBe(true);
    expect(result.code).toBe(parsed.exitCode);
    const streamed = await runBin(['exec', id, '--timeout', '1', '--', 'sh', '-c', 'echo before; sleep 30']);
    expect(streamed).toMatchObject({ code: 124, stdout: 'before\n' });
  });

  it('exec -e and -w; stdin with data is refused with 125', async () => {
    const env = await runBin([
      'exec',
      id,
      '-e',
      'A=1=2',
      '--env',
      'B=',
      '-w',
      'src',
      '--',
      'sh',
      '-c',
      'echo "$A|$B|$(pwd)"',
    ]);
    expect(env).toMatchObject({ code: 0, stdout: '1=2||/work/repo/src\n' });
    const piped = await runBin(['exec', id, '--json', '--', 'cat'], {}, 'abc');
    expect(piped.code).toBe(125);
    expect(jsonError(piped.stderr).code).toBe('STDIN_NOT_FORWARDED');
  });

  it('stop, then start re-runs the gate; exec on a stopped box says so', async () => {
    expect((await runBin(['stop', id])).code).toBe(0);
    const stopped = await runBin(['exec', id, '--json', '--', 'true']);
    expect(stopped.code).toBe(125);
    expect(jsonError(stopped.stderr)).toMatchObject({ code: 'SANDBOX_NOT_RUNNING' });
    expect(jsonError(stopped.stderr).message).toBe(
      `sandbox '${id}': the sandbox is exited, not running (ca-sandbox start ${id} starts it again and re-checks its isolation)`,
    );
    // verify reads the configuration a stopped box keeps, and says it is stopped.
    const verified = await runBin(['verify', id, '--json']);
    expect(JSON.parse(verified.stdout)).toMatchObject({ ok: true, running: false });
    expect((await runBin(['verify', id])).stderr).toMatch(
      /the box is stopped: these are the settings it starts with/,
    );
    const started = await runBin(['start', id, '--json']);
    expect(started.code).toBe(0);
    expect(JSON.parse(started.stdout)).toMatchObject({ id, started: true, verify: { ok: true } });
    expect((await runBin(['exec', id, '--', 'true'])).code).toBe(0);
  });

  it('exec --max-bytes truncates', async () => {
    const result = await runBin([
      'exec',
      id,
      '--json',
      '--max-bytes',
      '10',
      '--',
      'sh',
      '-c',
      'yes | head -c 100000',
    ]);
    const parsed = JSON.parse(result.stdout);
    expect(parsed.truncated).toBe(true);
    expect(parsed.stdout.length).toBeLessThanOrEqual(10);
  });

  it('exec exits 125 when the tool fails before the command runs', async () => {
    const missing = await runBin(['exec', `${id}-missing`, '--json', '--', 'true']);
    expect(missing.code).toBe(125);
    expect(missing.stdout).toBe('');
    expect(jsonError(missing.stderr).code).toBe('SANDBOX_NOT_FOUND');
  });

  it('exec of a command that never started: one error line, 127 not found, 126 cannot run, nothing on stdout', async () => {
    // Both entries: the bin's fast path (plain exec) and commander's (a global flag first).
    for (const prefix of [[], ['--no-color']]) {
      const missing = await runBin([...prefix, 'exec', id, '--', 'no-such-command']);
      expect(missing).toMatchObject({ code: 127, stdout: '' });
      expect(missing.stderr.split('\n')[0]).toBe('error: command not found in the box: no-such-command');
      expect(missing.stderr).not.toMatch(/OCI runtime/);
    }
    const json = await runBin(['exec', id, '--json', '--', 'no-such-command']);
    expect(json).toMatchObject({ code: 127, stdout: '' });
    expect(jsonError(json.stderr).code).toBe('COMMAND_NOT_FOUND');
    const notExecutable = await runBin(['exec', id, '--', '/etc/passwd']);
    expect(notExecutable).toMatchObject({
      code: 126,
      stdout: '',
      stderr: 'error: cannot run /etc/passwd in the box: permission denied\n',
    });
    const noDir = await runBin(['exec', id, '-w', 'no-such-dir', '--', 'ls']);
    expect(noDir).toMatchObject({ code: 126, stdout: '' });
    expect(noDir.stderr.split('\n')[0]).toBe(
      'error: working directory not usable in the box: /work/repo/no-such-dir (no such file or directory)',
    );
  });

  it('cp copies a file and a directory out, refuses to overwrite without --force', async () => {
    const file = join(work, 'readme-out.md');
    const copied = await runBin(['cp', `${id}:/work/repo/README.md`, file, '--json']);
    expect(copied.code).toBe(0);
    expect(JSON.parse(copied.stdout)).toMatchObject({ files: 1, skipped: [] });
    expect(readFileSync(file, 'utf8')).toBe('# fixture\nhello from the fixture\n');

    const again = await runBin(['cp', `${id}:/work/repo/README.md`, file]);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/^error: '.*readme-out.md' exists \(use --force to replace the file\)\n$/);
    expect((await runBin(['cp', `${id}:/work/repo/README.md`, file, '--force'])).code).toBe(0);

    const dir = join(work, 'src-out');
    const tree = await runBin(['cp', `${id}:src`, dir]);
    expect(tree.code).toBe(0);
    expect(tree.stdout).toMatch(/^copied 1 file, 1 directory/);
    expect(readFileSync(join(dir, 'main.sh'), 'utf8')).toContain('main ran');
  });

  it('cp of a missing path says so; under /proc, /sys or /dev it says why and how to read it', async () => {
    const missing = await runBin(['cp', `${id}:no/such/file`, join(work, 'missing-out')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toBe("error: '/work/repo/no/such/file' does not exist in the sandbox\n");
    const proc = await runBin(['cp', `${id}:/proc/self/environ`, join(work, 'environ-out')]);
    expect(proc.code).toBe(2);
    expect(proc.stderr).toMatch(
      /^error: '\/proc\/self\/environ' cannot be copied out: \/proc, \/sys and \/dev are the kernel's views/,
    );
    expect(proc.stderr).toContain(`hint: read it with: ca-sandbox exec ${id} -- cat /proc/self/environ\n`);
    const json = await runBin(['cp', `${id}:/sys/kernel/it's here`, join(work, 'sys-out'), '--json']);
    expect(json.code).toBe(2);
    expect(jsonError(json.stderr)).toMatchObject({
      code: 'CP_SOURCE',
      hint: `read it with: ca-sandbox exec ${id} -- cat '/sys/kernel/it'\\''s here'`,
    });
    expect(existsSync(join(work, 'environ-out'))).toBe(false);
  });

  it('cp never prints a hostile file name raw', async () => {
    const script = 'mkdir -p h && ln -s /etc/passwd "h/$(printf "x\\033[2Jy")" && echo ok > h/file';
    expect((await runBin(['exec', id, '--', 'sh', '-c', script])).code).toBe(0);
    const result = await runBin(['cp', `${id}:h`, join(work, 'hostile-out')]);
    expect(result.code).toBe(0);
    expect(result.stdout + result.stderr).not.toContain('\u001b');
    expect(result.stderr).toContain('skipped h/x\\x1b[2Jy: ');
    const json = await runBin(['cp', `${id}:h`, join(work, 'hostile-out-json'), '--json']);
    expect(json.stdout).not.toContain('\u001b');
    expect(JSON.parse(json.stdout).skipped[0].path).toBe('h/x\u001b[2Jy');
  });

  it('cp into a box is refused with exit 2', async () => {
    const result = await runBin(['cp', join(repo, 'README.md'), `${id}:/work/repo/x`]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/egress is out-only/);
  });

  it('verify prints every isolation check as a row', async () => {
    const json = await runBin(['verify', id, '--json']);
    expect(json.code).toBe(0);
    const report = JSON.parse(json.stdout) as {
      ok: boolean;
      checks: { check: string; expected: string; seen: string; pass: boolean }[];
    };
    expect(report.ok).toBe(true);
    expect(report).toMatchObject({ running: true });
    expect(report.checks.length).toBeGreaterThan(5);
    for (const row of report.checks) {
      expect(row).toEqual(
        expect.objectContaining({
          check: expect.any(String),
          expected: expect.any(String),
          seen: expect.any(String),
          pass: true,
        }),
      );
    }
    const human = await runBin(['verify', id]);
    expect(human.code).toBe(0);
    expect(human.stdout.split('\n')[0]).toMatch(/^CIS\s+CHECK\s+EXPECTED\s+SEEN\s+RESULT$/);
    expect(human.stdout.trim().split('\n')).toHaveLength(report.checks.length + 1);
  });

  it('--verbose prints each docker argv', async () => {
    const result = await runBin(['list', '--verbose']);
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/^\+ docker \S+/m);
  });

  it('destroy --json removes everything and list no longer shows it; an unknown id beside it is a JSON error', async () => {
    const result = await runBin(['destroy', id, `${id}-gone`, '--json']);
    expect(result.code).toBe(2);
    // stderr holds nothing but JSON errors under --json, one per unknown id.
    expect(
      result.stderr
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line)),
    ).toEqual([{ error: { code: 'SANDBOX_NOT_FOUND', message: `sandbox '${id}-gone': no such sandbox` } }]);
    const teardown = JSON.parse(result.stdout);
    expect(teardown.notFound).toEqual([`${id}-gone`]);
    expect(teardown.failures).toEqual([]);
    expect(teardown.leftovers).toEqual([]);
    expect(teardown.removed.length).toBeGreaterThan(0);
    expect(remainingObjects(id)).toEqual([]);
    const list = JSON.parse((await runBin(['list', '--json'])).stdout) as { id: string }[];
    expect(list.map((r) => r.id)).not.toContain(id);
  });
});

describe.skipIf(!READY)('run: create, shell, destroy', () => {
  const id = `sbx-${randomUUID().slice(0, 8)}`;
  const repo = mkdtempSync(join(tmpdir(), 'ca-sbx-run-'));
  afterAll(() => {
    forceRemoveSandbox(id);
    rmSync(repo, { recursive: true, force: true });
  });

  it('refuses to run without a terminal, before anything is created', async () => {
    writeFileSync(join(repo, 'README.md'), 'run fixture\n');
    const piped = await runBin(['run', repo, '--name', id, '--json'], {}, 'exit 4\n');
    expect(piped.code).toBe(2);
    expect(jsonError(piped.stderr).code).toBe('SHELL_NEEDS_TERMINAL');
    expect(remainingObjects(id)).toEqual([]);
  });

  it('in a terminal: exits with the shell`s code and leaves nothing behind', async () => {
    const result = await runBinInTerminal(
      ['run', repo, '--name', id, '--json', '--quiet'],
      /\[sandbox [^\]]+\] /,
      'cat README.md; exit 4\n',
    );
    expect(result.code).toBe(4);
    expect(result.output).toContain('run fixture');
    const text = result.output.replace(/\r\n/g, '\n');
    const summary = JSON.parse(text.slice(text.lastIndexOf('{\n  "sandbox"')));
    expect(summary).toMatchObject({
      sandbox: { id },
      shellExitCode: 4,
      teardown: { failures: [], leftovers: [] },
    });
    expect(remainingObjects(id)).toEqual([]);
  });

  it('prune --dry-run --json lists without removing; destroy of an unknown id is a usage error', async () => {
    const dry = await runBin(['prune', '--dry-run', '--json']);
    expect(dry.code).toBe(0);
    expect(JSON.parse(dry.stdout)).toEqual(
      expect.objectContaining({ dryRun: true, removed: expect.any(Array), leftovers: [] }),
    );
    const unknown = await runBin(['destroy', `${id}-unknown`, '--json']);
    expect(unknown.code).toBe(2);
    expect(jsonError(unknown.stderr).code).toBe('SANDBOX_NOT_FOUND');
    // Several ids, none known: one error per id, and no "nothing to remove" before them (it read
    // as a success ahead of the failures).
    const none = await runBin(['destroy', `${id}-unknown-a`, `${id}-unknown-b`]);
    expect(none.code).toBe(2);
    expect(none.stdout).toBe('');
    expect(none.stderr).not.toMatch(/nothing to remove/);
    expect(none.stderr.match(/^error: sandbox '[^']+': no such sandbox$/gm)).toHaveLength(2);
  });
});

describe.skipIf(!LIFECYCLE_BUILT)('exit codes through the bin', () => {
  it('3 with an install hint when Docker does not answer', async () => {
    const human = await runBin(['list'], DEAD_DOCKER);
    expect(human.code).toBe(3);
    expect(human.stderr).toMatch(/^error: docker is not available/im);
    expect(human.stderr).toMatch(/^hint: .*docker/im);
    expect(human.stderr).not.toMatch(/\n\s+at /);
    const json = await runBin(['create', '.', '--json'], DEAD_DOCKER);
    expect(json.code).toBe(3);
    expect(jsonError(json.stderr)).toMatchObject({ code: 'DOCKER_UNAVAILABLE', hint: expect.any(String) });
    expect((await runBin(['doctor'], DEAD_DOCKER)).code).toBe(3);
  });

  it('exec exits 125, not a fake command exit code, when Docker does not answer', async () => {
    const result = await runBin(['exec', 'sbx-x', '--json', '--', 'true'], DEAD_DOCKER);
    expect(result.stdout).toBe('');
    expect(result.code).toBe(125);
    expect(jsonError(result.stderr).code).toBe('DOCKER_UNAVAILABLE');
  });

  it('2 for bad input, with one line naming the problem', async () => {
    const bad = await runBin(['create', '.', '--memory', 'lots']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe(
      "error: invalid value for --memory: 'lots' is not a number with an optional unit b, k, m, g or t (e.g. 512m, 2g, 2gb, 1.5g)\n",
    );
    const missing = await runBin(['create', '/nonexistent/dir/for/sure']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^error: invalid source/);
  });

  it('allowlist prints that it is EXPERIMENTAL every time, also under --json and --quiet', async () => {
    for (const extra of [[], ['--json'], ['--quiet']]) {
      // runsc with allowlist is refused by the lifecycle before anything is created.
      const result = await runBin([
        'create',
        '.',
        '--network',
        'allowlist',
        '--allow',
        '192.0.2.1',
        '--runtime',
        'runsc',
        ...extra,
      ]);
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/^warning: .*EXPERIMENTAL/m);
    }
  });

  it('an allowlist with a domain goes through the gateway: no EXPERIMENTAL warning; runsc refused with the reason', async () => {
    const result = await runBin([
      'create',
      '.',
      '--network',
      'allowlist',
      '--allow',
      '*.example.com',
      '--runtime',
      'runsc',
    ]);
    expect(result.code).toBe(2);
    expect(result.stderr).not.toMatch(/EXPERIMENTAL/);
    expect(result.stderr).toMatch(
      /^error: runtime runsc cannot run an allowlist box here: gVisor is registered with --network=none/m,
    );
    const bad = await runBin(['create', '.', '--network', 'allowlist', '--allow', 'exa mple.com']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^error: invalid egress destination 'exa mple.com'/m);
  });
});
