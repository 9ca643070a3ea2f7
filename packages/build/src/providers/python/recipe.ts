import { DEPS_SRC, REPO_DIR } from '@ca-sandbox/docker';
import { PIP_REPORT } from '../../install-scripts.js';
import { filterRequirements, hasInstallableRequirement, pythonLocalPaths } from '../../local-paths.js';
import type { ManifestFile } from '../../manifests.js';
import type { Detection } from '../../provider.js';
import type { ProviderInstall, ProviderRecipe } from '../provider-recipe.js';
import { PYTHON_REQS_PROGRAM } from './reqs.js';

/** Python: what a developer installs to run the tests, into /deps/python, on PYTHONPATH. */
export const pythonRecipe: ProviderRecipe = {
  env(files) {
    const local = pythonLocalPaths(files).flatMap((rel) => [`${REPO_DIR}/${rel}`, `${REPO_DIR}/${rel}/src`]);
    // The project itself, as `pip install -e .` gives a developer: a src layout's packages import.
    const project = files.some((f) => ['pyproject.toml', 'setup.py', 'setup.cfg'].includes(f.path))
      ? [`${REPO_DIR}/src`]
      : [];
    return [
      { name: 'PYTHONPATH', value: ['/deps/python', ...local, ...project].join(':') },
      { name: 'PATH', value: '/deps/python/bin:$PATH', expand: true },
      { name: 'PIP_DISABLE_PIP_VERSION_CHECK', value: '1' },
    ];
  },
  install(files, detection) {
    const paths = pythonLocalPaths(files);
    const part = pythonInstall(files, detection);
    const notes = paths.length
      ? [`local path dependencies on PYTHONPATH from ${REPO_DIR}: ${paths.join(', ')}`]
      : [];
    return { ...part, notes: [...notes, ...part.notes] };
  },
  linkNodeModules: false,
};

/** Scratch space of the install step (emptied at its end). */
const TOOLS = '/tmp/ca-sbx-tools';
const REQ = '/tmp/ca-sbx-req.txt';
const REQ_INSTALL = '/tmp/ca-sbx-req2.txt';
const PROGRAM = '/tmp/ca-sbx-reqs.py';
const PIP = 'python3 -m pip';
const PY = 'python3';
const PIP_TARGET = 'install --no-cache-dir --disable-pip-version-check --target /deps/python';

// The program is written by a quoted here-document: the shell expands nothing in it.
const WRITE_PROGRAM = `cat > ${PROGRAM} <<'CA_SBX_PY'\n${PYTHON_REQS_PROGRAM}CA_SBX_PY`;
// Drops requirement lines that point into the tree (they resolve from /work/repo at run time).
const DROP_LOCAL = `grep -v -E '^[[:space:]]*(-e[[:space:]]|--editable|\\.|/|file:)|@[[:space:]]*file:' ${REQ} > ${REQ_INSTALL} || true`;
// --report: which packages pip built from source (their code ran), for the vetting report.
const INSTALL_REQ = `if grep -q '[^[:space:]]' ${REQ_INSTALL}; then ${PIP} ${PIP_TARGET} --report ${PIP_REPORT} -r ${REQ_INSTALL}; else echo 'ca-sandbox: no python requirement to install'; fi`;

function tools(spec: string): string {
  return `${PIP} install --no-cache-dir --disable-pip-version-check --target ${TOOLS} ${spec}`;
}
const WITH_TOOLS = `PYTHONPATH=${TOOLS} PATH=${TOOLS}/bin:$PATH`;

/** Root requirement files a developer installs: requirements.txt and its dev/test siblings. */
export function developerRequirementFiles(files: readonly ManifestFile[]): string[] {
  return files
    .map((file) => file.path)
    .filter(
      (path) =>
        !path.includes('/') &&
        (path === 'requirements.txt' ||
          /^requirements[-_.]?(dev|devel|develop|test|tests|testing)\.txt$/i.test(path)),
    )
    .sort((a, b) => (a === 'requirements.txt' ? -1 : b === 'requirements.txt' ? 1 : a < b ? -1 : 1));
}

function hasProjectTable(files: readonly ManifestFile[]): boolean {
  const pyproject = files.find((file) => file.path === 'pyproject.toml')?.content.toString('utf8') ?? '';
  return /^\s*\[project\]|^\s*\[dependency-groups\]/m.test(pyproject);
}

/**
 * The python install step: what a developer installs to run the tests, into /deps/python.
 * uv: the default (dev) and test dependency groups and a test extra (uv export when uv is in the
 * image, else the lock's pins read by our program and installed with pip); poetry: all groups
 * and extras (poetry.lock's pins read by our program, else `poetry export`);
 * pipenv: --dev; pip: requirements.txt, requirements-dev/-test files, and pyproject's
 * dependencies, test extra and dev/test dependency groups.
 */
export function pythonInstall(files: readonly ManifestFile[], detection: Detection): ProviderInstall {
  const installEnv = [{ name: 'PIP_NO_INPUT', value: '1' }];
  const exported = (lines: string[]) => [...lines, DROP_LOCAL, INSTALL_REQ];
  switch (detection.packageManager) {
    case 'uv':
      if (!files.some((file) => file.path === 'uv.lock')) break;
      return {
        installEnv,
        notes: ['uv: the default (dev) and test dependency groups and a test extra are installed'],
        install: exported([
          WRITE_PROGRAM,
          'if command -v uv >/dev/null 2>&1; then',
          `  uv export --frozen --no-hashes --no-emit-project --no-emit-workspace $(${PY} ${PROGRAM} uv-args) -o ${REQ}`,
          'else',
          `  echo 'ca-sandbox: uv is not in the base image: installing the pins of uv.lock with pip'`,
          `  ${PY} ${PROGRAM} uv-lock > ${REQ}`,
          'fi',
        ]),
      };
    case 'poetry':
      // The lock is enough: its pins are read by our program and installed with pip, with no
      // poetry (nor its plugin) to fetch from the index first.
      if (files.some((file) => file.path === 'poetry.lock'))
        return {
          installEnv,
          notes: ["poetry: poetry.lock's pins for every dependency group and extra are installed with pip"],
          install: exported([
            WRITE_PROGRAM,
            `echo 'ca-sandbox: installing the pins of poetry.lock with pip (every group and extra)'`,
            `${PY} ${PROGRAM} poetry-lock > ${REQ}`,
          ]),
        };
      return {
        installEnv,
        notes: ['poetry: every dependency group and extra are installed'],
        install: exported([
          tools('poetry poetry-plugin-export'),
          `${WITH_TOOLS} ${PY} -m poetry export --without-hashes --all-groups --all-extras -f requirements.txt -o ${REQ} || ${WITH_TOOLS} ${PY} -m poetry export --without-hashes --with dev -f requirements.txt -o ${REQ}`,
        ]),
      };
    case 'pipenv':
      return {
        installEnv,
        notes: ['pipenv: the default and dev packages are installed'],
        install: exported([tools('pipenv'), `${WITH_TOOLS} ${PY} -m pipenv requirements --dev > ${REQ}`]),
      };
  }
  const requirements = developerRequirementFiles(files);
  const installable = requirements.filter((path) => {
    const content = files.find((file) => file.path === path)?.content.toString('utf8') ?? '';
    return hasInstallableRequirement(filterRequirements(content).text);
  });
  const pyproject = hasProjectTable(files);
  if (installable.length === 0 && !pyproject) {
    return {
      installEnv,
      install: [],
      notes: [
        requirements.length
          ? `${requirements.join(', ')} name only local paths: nothing to install`
          : 'no requirements.txt or pyproject.toml [project] at the repo root: no python dependencies installed',
      ],
    };
  }
  // Absolute: pip reads a nested -r relative to the file that names it.
  const lines = [`: > ${REQ}`, ...installable.map((path) => `echo '-r ${DEPS_SRC}/${path}' >> ${REQ}`)];
  if (pyproject) lines.push(WRITE_PROGRAM, `${PY} ${PROGRAM} pyproject >> ${REQ}`);
  const what = [
    ...installable,
    ...(pyproject ? ["pyproject.toml's dependencies, test extra and groups"] : []),
  ];
  return { installEnv, notes: [`pip: installed ${what.join(', ')}`], install: exported(lines) };
}
