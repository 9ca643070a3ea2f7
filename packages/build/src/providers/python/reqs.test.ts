import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { PYTHON_REQS_PROGRAM } from './reqs.js';

// The program runs in the image's python3 (>= 3.11, pip's vendored packaging); the host's is the same kind.
const python = (() => {
  try {
    const version = execFileSync('python3', ['-c', 'import sys, tomllib, pip; print(sys.version_info[1])'], {
      encoding: 'utf8',
    });
    return Number(version) >= 11;
  } catch {
    return false;
  }
})();

const dir = mkdtempSync(join(tmpdir(), 'ca-sbx-pyreqs-'));
const program = join(dir, 'reqs.py');
writeFileSync(program, PYTHON_REQS_PROGRAM);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function run(mode: string, files: Record<string, string>): string {
  const cwd = mkdtempSync(join(dir, 'p-'));
  for (const [name, content] of Object.entries(files)) writeFileSync(join(cwd, name), content);
  return execFileSync('python3', [program, mode], { cwd, encoding: 'utf8' }).trim();
}

const PYPROJECT = `[project]
name = "demo"
version = "0.1.0"
dependencies = ["six>=1.16"]

[project.optional-dependencies]
test = ["attrs"]
heavy = ["torch"]

[dependency-groups]
dev = ["pytest>=8", { include-group = "lint" }, "demo[heavy]"]
lint = ["packaging"]
docs = ["sphinx"]
tests = ["freezegun"]
`;

const LOCK = `version = 1
requires-python = ">=3.11"

[[package]]
name = "demo"
version = "0.1.0"
source = { editable = "." }
dependencies = [{ name = "six" }]

[package.optional-dependencies]
test = [{ name = "attrs" }]
heavy = [{ name = "torch" }]

[package.dev-dependencies]
dev = [{ name = "pytest" }]
docs = [{ name = "sphinx" }]

[[package]]
name = "six"
version = "1.17.0"
source = { registry = "https://pypi.org/simple" }

[[package]]
name = "attrs"
version = "25.3.0"
source = { registry = "https://pypi.org/simple" }

[[package]]
name = "torch"
version = "2.0.0"
source = { registry = "https://pypi.org/simple" }

[[package]]
name = "pytest"
version = "8.4.2"
source = { registry = "https://pypi.org/simple" }
dependencies = [
    { name = "colorama", marker = "sys_platform == 'win32'" },
    { name = "iniconfig" },
]

[[package]]
name = "colorama"
version = "0.4.6"
source = { registry = "https://pypi.org/simple" }

[[package]]
name = "iniconfig"
version = "2.1.0"
source = { registry = "https://pypi.org/simple" }
`;

describe.skipIf(!python)('the python requirements program', { timeout: 30_000 }, () => {
  it('uv-lock: pins of the project, its dev/test groups and test extra; markers evaluated; not docs', () => {
    expect(run('uv-lock', { 'uv.lock': LOCK, 'pyproject.toml': PYPROJECT }).split('\n')).toEqual([
      'attrs==25.3.0',
      'iniconfig==2.1.0',
      'pytest==8.4.2',
      'six==1.17.0',
    ]);
  });

  it('uv-extras and pyproject: test extras, every group with include-group, not the project itself', () => {
    expect(run('uv-args', { 'pyproject.toml': PYPROJECT })).toBe('--group dev --group tests --extra test');
    expect(run('pyproject', { 'pyproject.toml': PYPROJECT }).split('\n')).toEqual([
      'six>=1.16',
      'attrs',
      'pytest>=8',
      'packaging',
      'freezegun',
    ]);
    const all = `${PYPROJECT}\n[tool.uv]\ndefault-groups = "all"\n`;
    expect(run('uv-args', { 'pyproject.toml': all })).toBe(
      '--group dev --group lint --group docs --group tests --extra test',
    );
    expect(run('pyproject', {})).toBe('');
  });

  it('poetry-lock: the pins pyproject reaches through poetry.lock, every group and extra, markers evaluated, no poetry', () => {
    const pyproject = `[tool.poetry]
name = "demo"
version = "0.1.0"

[tool.poetry.dependencies]
python = "^3.11"
six = "^1.16"
winonly = { version = "*", markers = "sys_platform == 'win32'" }
withextra = { version = "*", extras = ["fast"] }

[tool.poetry.group.test.dependencies]
pytest = "^8"
`;
    const lock = `[[package]]
name = "six"
version = "1.17.0"

[[package]]
name = "winonly"
version = "1.0"

[[package]]
name = "withextra"
version = "2.0"

[package.extras]
fast = ["speedup (>=1)"]

[[package]]
name = "speedup"
version = "1.1"

[[package]]
name = "pytest"
version = "8.4.2"

[package.dependencies]
colorama = {version = "*", markers = "sys_platform == \\"win32\\""}
pluggy = ">=1.5"

[[package]]
name = "pluggy"
version = "1.6.0"

[[package]]
name = "colorama"
version = "0.4.6"

[[package]]
name = "unreached"
version = "9.9"

[[package]]
name = "demo-local"
version = "0.0.1"

[package.source]
type = "directory"
url = "libs/local"
`;
    expect(run('poetry-lock', { 'pyproject.toml': pyproject, 'poetry.lock': lock }).split('\n')).toEqual([
      'pluggy==1.6.0',
      'pytest==8.4.2',
      'six==1.17.0',
      'speedup==1.1',
      'withextra==2.0',
    ]);
    // A poetry 2 project: [project] dependencies, PEP 508 markers evaluated.
    expect(
      run('poetry-lock', {
        'pyproject.toml': '[project]\nname = "p2"\ndependencies = ["six>=1; python_version >= \'3\'"]\n',
        'poetry.lock': lock,
      }),
    ).toBe('six==1.17.0');
  });
});
