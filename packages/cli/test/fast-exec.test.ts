import { describe, expect, it } from 'vitest';
import { parsePlainExec, VALUED_FLAGS } from '../src/fast-exec.js';
import { createProgram } from '../src/program.js';

describe('parsePlainExec (the bin fast path for exec)', () => {
  it('takes the plain form with its flags', () => {
    expect(
      parsePlainExec(['exec', 'demo', '--timeout', '5', '--max-bytes', '10', '--json', '--', 'ls', '-la']),
    ).toEqual({
      id: 'demo',
      command: ['ls', '-la'],
      flags: { timeout: '5', maxBytes: '10' },
      json: true,
      quiet: false,
      color: true,
    });
  });

  it('takes -e (repeatable) and -w', () => {
    expect(
      parsePlainExec(['exec', 'demo', '-e', 'A=1', '--env', 'B=2', '-w', 'src', '--', 'env'])?.flags,
    ).toEqual({ env: ['A=1', 'B=2'], workdir: 'src' });
  });

  it('keeps everything after -- as the command, flags included', () => {
    expect(parsePlainExec(['exec', 'demo', '--', 'sh', '-c', '--timeout', '--'])?.command).toEqual([
      'sh',
      '-c',
      '--timeout',
      '--',
    ]);
  });

  it.each([
    [['exec', '--help']],
    [['exec', 'demo', '--help', '--', 'true']],
    [['exec', 'demo', '--verbose', '--', 'true']],
    [['exec', 'demo', '--timeout', '--', 'true']],
    [['exec', 'demo', 'true']],
    [['exec', 'demo', '--']],
    [['exec', '--', 'true']],
    [['exec', '-x', '--', 'true']],
    [['exec', 'demo', '-it', '--', 'bash']],
    [['exec', 'demo', '-e', '--', 'true']],
    [['exec', 'demo', 'constructor', '--', 'true']],
    [['list']],
    [['--json', 'exec', 'demo', '--', 'true']],
  ])('leaves %j to the full CLI', (argv) => {
    expect(parsePlainExec(argv)).toBeUndefined();
  });
});

describe('the fast path and the program agree on exec', () => {
  it("takes every value flag that the program's exec command declares, by each spelling, and no other", () => {
    const program = createProgram({ exitCode: 0 });
    const exec = program.commands.find((command) => command.name() === 'exec');
    const declared = (exec?.options ?? [])
      .filter((option) => (option.required || option.optional) && !option.hidden)
      .flatMap((option) => [option.short, option.long].filter((flag): flag is string => Boolean(flag)));
    expect(new Set(VALUED_FLAGS.keys())).toEqual(new Set(declared));
    // The program's own boolean flags that the fast path knows are the global ones.
    const globals = program.options.map((option) => option.long);
    expect(globals).toEqual(expect.arrayContaining(['--json', '--quiet', '--no-color']));
  });
});
