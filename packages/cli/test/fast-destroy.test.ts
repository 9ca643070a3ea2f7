import { describe, expect, it } from 'vitest';
import { parsePlainDestroy } from '../src/fast-destroy.js';
import { createProgram } from '../src/program.js';

describe('parsePlainDestroy (the bin fast path for destroy)', () => {
  it('takes ids and the plain flags, rm too', () => {
    expect(parsePlainDestroy(['destroy', 'a', '--json', 'b', '--keep-volume', '-q', '--no-color'])).toEqual({
      ids: ['a', 'b'],
      keepVolume: true,
      json: true,
      quiet: true,
      color: false,
    });
    expect(parsePlainDestroy(['rm', 'a'])?.ids).toEqual(['a']);
  });

  it.each([
    [['destroy']],
    [['destroy', '--all']],
    [['destroy', 'a', '--keep-report']],
    [['destroy', 'a', '--help']],
    [['destroy', 'a', '--verbose']],
    [['destroy', 'a', '--frob']],
    [['destroy', '--', 'a']],
    [['exec', 'a']],
  ])('leaves %j to the full CLI', (argv) => {
    expect(parsePlainDestroy(argv)).toBeUndefined();
  });

  it("knows every flag of commander's destroy, or leaves them to it", () => {
    const program = createProgram({ exitCode: 0 });
    const destroy = program.commands.find((command) => command.name() === 'destroy');
    const declared = destroy?.options.map((option) => option.long) ?? [];
    // Those the fast path takes; the rest (--all, --keep-report) fall through by the test above.
    expect(
      declared.filter((flag) => flag && parsePlainDestroy(['destroy', 'a', flag]) !== undefined),
    ).toEqual(['--keep-volume']);
  });
});
