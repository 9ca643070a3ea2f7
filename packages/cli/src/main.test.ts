import { describe, expect, it } from 'vitest';
import { captureStreams } from '../test/_streams.js';
import { main } from './main.js';
import { cliVersion, createProgram } from './program.js';

async function run(args: string[], env: NodeJS.ProcessEnv = {}) {
  const streams = captureStreams({ env });
  const code = await main(args, streams);
  return { code, stdout: streams.stdout.text, stderr: streams.stderr.text };
}

const COMMANDS = [
  'doctor',
  'create',
  'run',
  'list',
  'exec',
  'shell',
  'start',
  'stop',
  'cp',
  'destroy',
  'prune',
  'verify',
  'config',
  'egress',
  'report',
  'mcp',
];

describe('the program', () => {
  it('has every command of the contract, with the aliases', () => {
    const program = createProgram({ exitCode: 0 });
    expect(program.commands.map((c) => c.name()).sort()).toEqual([...COMMANDS].sort());
    const alias = (name: string) => program.commands.find((c) => c.name() === name)?.aliases();
    expect(alias('create')).toEqual(['up']);
    expect(alias('list')).toEqual(['ls']);
    expect(alias('destroy')).toEqual(['rm']);
  });

  it('prints the version', async () => {
    const result = await run(['--version']);
    expect(result).toMatchObject({ code: 0, stdout: `${cliVersion()}\n` });
  });

  it.each(COMMANDS)('shows an example in `%s --help`', async (command) => {
    const result = await run([command, '--help']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/Examples?:\n {2}\$ ca-sandbox /);
  });

  it('lists the create options in its help', async () => {
    const { stdout } = await run(['create', '--help']);
    for (const option of [
      '--name',
      '--network',
      '--allow',
      '--builder',
      '--ref',
      '--runtime',
      '--memory',
      '--cpus',
      '--pids',
      '--base-image',
    ]) {
      expect(stdout).toContain(option);
    }
  });
});

describe('usage errors', () => {
  it('exit 2 with one error line and a hint, no stack', async () => {
    const result = await run(['create', './x', '--cpus', 'many']);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe(
      'error: invalid value for --cpus: expected a number of cpus such as 1 or 0.5\n',
    );
  });

  it('exit 2 for commander errors, as JSON under --json', async () => {
    const result = await run(['--json', 'create', './x', '--network', 'host']);
    expect(result.code).toBe(2);
    const parsed = JSON.parse(result.stderr);
    expect(parsed.error.code).toBe('USAGE');
    expect(parsed.error.message).toMatch(/--network/);
    expect((await run(['create', './x', '--network', 'host', '--json'])).stderr).toMatch(/^\{"error":/);
  });

  it('exit 2 for an unknown command or a missing argument', async () => {
    expect((await run(['frobnicate'])).code).toBe(2);
    expect((await run(['create'])).code).toBe(2);
    expect((await run(['destroy'])).stderr).toMatch(/missing <id\.\.\.> \(or --all\)/);
    expect((await run(['destroy', 'a', '--all'])).code).toBe(2);
  });

  it('refuses copying into a box (exit 2, egress is out-only)', async () => {
    const result = await run(['cp', './local-file', 'demo:/work/repo/x']);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^error: copying into a sandbox is refused: egress is out-only/);
  });

  it('cp to - refuses a terminal, --json and --force before anything runs (exit 2)', async () => {
    const streams = captureStreams({ tty: true, env: { NO_COLOR: '1' } });
    expect(await main(['cp', 'demo:/work/repo', '-'], streams)).toBe(2);
    expect(streams.stderr.text).toMatch(/^error: refusing to write a tar stream to a terminal/);
    expect(streams.stdout.text).toBe('');
    expect((await run(['cp', 'demo:/work/repo', '-', '--json'])).stderr).toMatch(/stdout carries the tar/);
    expect((await run(['cp', 'demo:/work/repo', '-', '--force'])).code).toBe(2);
    expect((await run(['cp', 'demo:/work/repo', './x', '--git', 'all'])).code).toBe(2);
  });

  it('--with-claude refuses another --network and any --allow, in one line (exit 2)', async () => {
    for (const command of ['create', 'run']) {
      const offline = await run([command, './repo', '--with-claude', '--network', 'offline']);
      expect(offline.code).toBe(2);
      expect(offline.stderr).toMatch(
        /^error: --with-claude runs the box under the allowlist policy with api\.anthropic\.com:443 only: it cannot be combined with --network offline$/m,
      );
      const allow = await run([command, './repo', '--with-claude', '--allow', 'example.com']);
      expect(allow.code).toBe(2);
      expect(allow.stderr).toMatch(/^error: --with-claude allows api\.anthropic\.com:443 and nothing else/m);
    }
    // Four commands that each load the lifecycle: slow on a busy machine.
  }, 30_000);

  it('exec: tool errors exit 125 so they never look like the command`s own code', async () => {
    const bad = await run(['exec', 'demo', '-la']);
    expect(bad.code).toBe(125);
    expect(bad.stderr).toMatch(/hint: put the command after --/);
    expect((await run(['exec', 'Not An Id', '--', 'true'])).code).toBe(125);
    expect((await run(['exec', 'demo', '--timeout', 'soon', '--', 'true'])).stderr).toMatch(/--timeout/);
  });

  it('exec -it / -i / -t point to shell; -e needs a value; --max-bytes needs --json (all 125)', async () => {
    for (const flags of [['-it'], ['-i'], ['-t'], ['--tty'], ['--interactive']]) {
      const result = await run(['exec', ...flags, 'demo', '--', 'bash']);
      expect(result.code).toBe(125);
      expect(result.stderr).toMatch(/exec is not interactive/);
      expect(result.stderr).toMatch(/hint: .*ca-sandbox shell <id>/);
    }
    const noValue = await run(['exec', 'demo', '-e', 'HOME', '--', 'true']);
    expect(noValue.code).toBe(125);
    expect(noValue.stderr).toMatch(/expected KEY=VALUE/);
    const cap = await run(['exec', 'demo', '--max-bytes', '10', '--', 'true']);
    expect(cap.code).toBe(125);
    expect(cap.stderr).toMatch(/--max-bytes caps what --json captures/);
  });

  it('sanitises hostile text inside error messages', async () => {
    const result = await run(['exec', 'x\u001b]0;pwned\u0007\u001b[2J', '--', 'true']);
    expect(result.stderr).not.toContain('\u001b');
    expect(result.stderr.trim().split('\n')).toHaveLength(2);
  });

  it('prints the stack only under --verbose', async () => {
    expect((await run(['create', './x', '--pids', '0'])).stderr).toBe(
      'error: invalid value for --pids: 0 is not a whole number from 16 to 1000000\n',
    );
    const verbose = await run(['create', './x', '--pids', '0', '--verbose']);
    expect(verbose.code).toBe(2);
    expect(verbose.stderr).toMatch(/\n.*at .*limits\.[jt]s/);
  });
});
