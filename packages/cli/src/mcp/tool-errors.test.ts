import { describe, expect, it } from 'vitest';
import { toolErrorReport, toolWords } from './tool-errors.js';

describe('tool errors name parameters, not CLI flags', () => {
  it.each([
    [
      'invalid value for --memory: expected a size such as 512m or 2g',
      'invalid value for `memory`: expected a size such as 512m or 2g',
    ],
    ['--allow only applies to --network allowlist', '`allow` only applies to `network` allowlist'],
    [
      "the destination 'x' exists (use force to replace it)",
      "the destination 'x' exists (set force: true to replace it)",
    ],
    [
      "'/out/x' exists (use --force to replace the file)",
      "'/out/x' exists (set force: true to replace the file)",
    ],
    ['missing <repo-url-or-path>', 'missing `source`'],
    ['expected <id>:<path> as the source', 'expected `path` as the source'],
    ['or use --builder builtin', 'or use `builder` builtin'],
    ['pick another --name or destroy it first', 'pick another `name` or destroy it first'],
    ['unknown option --frob-it (see --help)', 'unknown option `frobIt`'],
    ['put the command after --, e.g. x', 'put the command after --, e.g. x'],
  ])('%s', (cli, tool) => {
    expect(toolWords(cli)).toBe(tool);
  });

  it('rewrites message and hint, keeps code and kind', () => {
    expect(
      toolErrorReport({ code: 'X', kind: 'usage', message: 'bad --cpus', hint: 'or --base-image' }),
    ).toEqual({ code: 'X', kind: 'usage', message: 'bad `cpus`', hint: 'or `baseImage`' });
  });
});
