import { describe, expect, it } from 'vitest';
import {
  filterRequirements,
  manifestDirs,
  pythonLocalPaths,
  repoRelativePath,
  requirementLocalPath,
} from './local-paths.js';

const f = (path: string, content: string) => ({ path, content: Buffer.from(content) });

describe('local path dependencies', () => {
  it('recognises local requirement lines', () => {
    expect(requirementLocalPath('./libs/a')).toBe('./libs/a');
    expect(requirementLocalPath('-e ./libs/a')).toBe('./libs/a');
    expect(requirementLocalPath('--editable=./libs/a')).toBe('./libs/a');
    expect(requirementLocalPath('mylib @ file:./libs/a')).toBe('file:./libs/a');
    expect(requirementLocalPath('requests==2.0  # ./comment')).toBeUndefined();
    expect(requirementLocalPath('-r other.txt')).toBeUndefined();
    expect(requirementLocalPath('# ./x')).toBeUndefined();
  });

  it('keeps only paths inside the repo with safe characters', () => {
    expect(repoRelativePath('', './libs/a/')).toBe('libs/a');
    expect(repoRelativePath('sub', '../libs/a')).toBe('libs/a');
    expect(repoRelativePath('', '../outside')).toBeUndefined();
    expect(repoRelativePath('', '/etc')).toBeUndefined();
    expect(repoRelativePath('', 'file:///etc')).toBeUndefined();
    expect(repoRelativePath('', './a b')).toBeUndefined();
    expect(repoRelativePath('', './a"b')).toBeUndefined();
    expect(repoRelativePath('', './a$(x)')).toBeUndefined();
    expect(repoRelativePath('', '.')).toBeUndefined();
  });

  it('finds python path deps in requirements, pyproject and Pipfile', () => {
    const files = [
      f('requirements.txt', '-e ./libs/a\nrequests\n'),
      f(
        'pyproject.toml',
        '[tool.poetry.dependencies]\nb = { path = "libs/b", develop = true }\n[tool.uv.sources]\nc = { path = "../../etc" }\n',
      ),
      f('Pipfile', 'd = {path = "./libs/d"}\n'),
    ];
    expect(pythonLocalPaths(files)).toEqual(['libs/a', 'libs/b', 'libs/d']);
  });

  it('comments out local lines and keeps the rest', () => {
    const { text, removed } = filterRequirements('a==1\r\n./libs/x\n-e ../y\n');
    expect(removed).toEqual(['./libs/x', '-e ../y']);
    expect(text.split('\n')[0]).toBe('a==1');
    expect(text).toMatch(/^# ca-sandbox: local path/m);
  });

  it('lists manifest directories with safe names only', () => {
    const files = [f('go.mod', ''), f('libs/a/go.mod', ''), f("libs/b'c/go.mod", ''), f('x/go.sum', '')];
    expect(manifestDirs(files, 'go.mod')).toEqual(['', 'libs/a']);
  });
});
