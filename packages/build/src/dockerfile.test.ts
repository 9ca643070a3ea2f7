import { describe, expect, it } from 'vitest';
import { CA_BUNDLE_PATH, CA_TRUST_DIR, CA_TRUST_ENV, EXTRA_CA_PATH } from './ca-trust.js';
import { renderClaudeDockerfile } from './claude-code.js';
import { CLAUDE_CODE_VERSION } from './claude-code-pin.js';
import type { RenderOptions } from './dockerfile.js';
import {
  DEPS_SRC_IS_A_DIRECTORY,
  END_INSTALL_PROCESSES,
  envLines,
  envValue,
  installCommand,
  installScript,
  PREP_SCRIPT,
  renderDockerfile,
  renderPrepDockerfile,
  runLine,
} from './dockerfile.js';
import type { ManifestFile } from './manifests.js';
import { detectProvider } from './provider.js';
import { builtinRecipe, contextFiles } from './recipe.js';
import { TOOLCHAIN_MARKER, TOOLCHAIN_PROBE } from './toolchain.js';

const f = (path: string, content = ''): ManifestFile => ({ path, content: Buffer.from(content) });
/** Every `NAME="value"` of the Dockerfile's ENV instructions (one instruction may hold several). */
const envEntries = (text: string): string[] =>
  text
    .split('\n')
    .filter((line) => line.startsWith('ENV '))
    .flatMap((line) => [...line.matchAll(/([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"/g)].map((m) => m[0]));
/** What a deps build runs: its Dockerfile (no RUN: the install is a container) and the install's script. */
const build = (base: string, recipe: ReturnType<typeof builtinRecipe>, options: RenderOptions = {}) => {
  const command = installCommand(recipe, options);
  return { dockerfile: renderDockerfile(base, recipe, options), command, script: command.at(-1) as string };
};
/** The Dockerfile, then the install's script. */
const render = (files: ManifestFile[], base = 'ca-sbx-base:debian', options: RenderOptions = {}) => {
  const { dockerfile, script } = build(base, builtinRecipe(files, detectProvider(files)), options);
  return `${dockerfile}\n${script}`;
};

describe('renderDockerfile (built-in builder)', () => {
  it('node: manifests only, install as 1000 into /deps, exports NODE_PATH and .bin, no ARG', () => {
    const text = render([f('package.json', '{}'), f('package-lock.json', '{}')], 'node:22-bookworm-slim');
    const lines = text.split('\n');
    expect(lines[0]).toBe('FROM node:22-bookworm-slim');
    expect(text).toContain('COPY --chown=1000:1000 manifests/ /deps/src/');
    expect(text).not.toMatch(/^(ARG|ADD|VOLUME|EXPOSE|ONBUILD)\b/m);
    expect(envEntries(text)).toContain('NODE_PATH="/deps/node_modules"');
    expect(envEntries(text)).toContain(
      'PATH="/deps/pm/bin:/deps/node_modules/.bin:/deps/.ca-sbx/bin:/tmp/.local/bin:$PATH"',
    );
    expect(envEntries(text)).toContain('COREPACK_ENABLE_DOWNLOAD_PROMPT="0"');
    expect(envEntries(text)).toContain('pnpm_config_verify_deps_before_run="false"');
    expect(envEntries(text)).toContain('HOME="/tmp"');
    expect(text).toContain('npm ci --no-audit');
    // node_modules stay in /deps/src (workspace links rewritten into /work/repo); /deps/node_modules links there.
    expect(text).not.toContain('mv node_modules');
    expect(text).toContain('ln -sfn src/node_modules /deps/node_modules');
    expect(text).toContain('workspace link(s) now point into');
    // pnpm's bin shims get NODE_PATH under /work/repo (the repo-view hostile test runs one).
    expect(text).toContain('bin shim(s) now names');
    // The installed lockfiles' hashes come after every process of the install is gone.
    const killed = text.indexOf(END_INSTALL_PROCESSES);
    expect(killed).toBeGreaterThan(text.indexOf('npm ci --no-audit'));
    expect(text.indexOf('ca-sandbox-installed-lockfile: ')).toBeGreaterThan(killed);
    // /work/repo exists and belongs to 1000 (the prep image's root step); the image ends as non-root.
    expect(PREP_SCRIPT).toContain('chown 1000:1000 /deps /deps/src /work/repo');
    expect(renderPrepDockerfile('node:22', {})).toContain('\nWORKDIR /work/repo\n');
    const users = lines.filter((l) => l.startsWith('USER '));
    expect(users).toEqual(['USER 1000:1000']);
    // The install runs after the switch to 1000:1000.
    expect(lines.indexOf('USER 1000:1000')).toBeLessThan(lines.findIndex((l) => l.includes('npm ci')));
  });

  it('the install step names the image: concurrent builds of other repos never share it', () => {
    const files = [f('package.json', '{}'), f('package-lock.json', '{}')];
    const recipe = builtinRecipe(files, detectProvider(files));
    const run = (image: string) => build('node:22', recipe, { image }).script;
    expect(run('ca-sbx:a-1')).toContain(': ca-sandbox install for ca-sbx:a-1');
    expect(run('ca-sbx:a-1')).not.toBe(run('ca-sbx:b-2'));
    expect(() => installCommand(recipe, { image: 'x\nRUN evil' })).toThrow(/invalid image/);
  });

  it('the install step exports the gateway as its proxy (never the image ENV), the other proxy variables empty', () => {
    const files = [f('package.json', '{}'), f('package-lock.json', '{}')];
    const recipe = builtinRecipe(files, detectProvider(files));
    const { dockerfile, script } = build('node:22', recipe, {
      proxyUrl: 'http://172.30.0.2:3128',
    } as RenderOptions);
    const exports = script.split('\n').filter((line) => /^export [A-Za-z_]*(proxy|PROXY)=/.test(line));
    expect(exports).toContain("export HTTPS_PROXY='http://172.30.0.2:3128'");
    expect(exports).toContain("export http_proxy='http://172.30.0.2:3128'");
    expect(exports).toContain("export NO_PROXY=''");
    expect(exports).toContain("export ALL_PROXY=''");
    // Before anything of the repo's runs, and never in the image's ENV (a commit keeps a container's Env).
    expect(script.indexOf('HTTPS_PROXY=')).toBeLessThan(script.indexOf('npm ci'));
    expect(dockerfile).not.toMatch(/proxy/i);
    expect(() => installCommand(recipe, { proxyUrl: "http://x:1' ; id ; '" })).toThrow(/invalid proxy/);
  });

  it("the context's stand-ins go after the last kill, with folders made only for them, before the final check", () => {
    const plain = [f('package.json', '{"dependencies":{"is-number":"7.0.0"}}'), f('package-lock.json', '{}')];
    const recipe = {
      ...builtinRecipe(plain, detectProvider(plain)),
      madeUpFiles: ['packages/tool/dist/cli.js', "packages/o'dd/bin x"],
    };
    const script = installScript(recipe, { depsViewLower: true });
    const removal = script.split('\n').find((line) => line.includes('rm -f --')) ?? '';
    expect(removal).toBe(
      `(cd /deps/src && command -p rm -f -- 'packages/tool/dist/cli.js' 'packages/o'\\''dd/bin x' && command -p rmdir -p --ignore-fail-on-non-empty -- 'packages/tool/dist' 'packages/o'\\''dd') 2>/dev/null || :`,
    );
    expect(script.lastIndexOf(END_INSTALL_PROCESSES)).toBeLessThan(script.indexOf(removal));
    expect(script.indexOf(removal)).toBeLessThan(script.lastIndexOf(DEPS_SRC_IS_A_DIRECTORY));
    expect(() => installScript({ ...recipe, madeUpFiles: ['../etc/passwd'] })).toThrow(/unsafe context path/);
    expect(installScript({ ...recipe, madeUpFiles: [] })).not.toContain('rm -f --');
  });

  it("a repo view's install ends, after the last kill, by checking /deps/src is a directory of its own", () => {
    const plain = [f('package.json', '{"dependencies":{"is-number":"7.0.0"}}'), f('package-lock.json', '{}')];
    const recipe = builtinRecipe(plain, detectProvider(plain));
    const viewed = installScript(recipe, { depsViewLower: true });
    expect(viewed.endsWith(DEPS_SRC_IS_A_DIRECTORY)).toBe(true);
    // After the final kill: nothing of the repo's runs between the check and the commit.
    expect(viewed.lastIndexOf(END_INSTALL_PROCESSES)).toBeLessThan(
      viewed.lastIndexOf(DEPS_SRC_IS_A_DIRECTORY),
    );
    expect(DEPS_SRC_IS_A_DIRECTORY).toMatch(
      /^\[ -d \/deps \] && \[ ! -L \/deps \] && \[ -d \/deps\/src \] && \[ ! -L \/deps\/src \] \|\|/,
    );
    expect(installScript(recipe)).not.toContain(DEPS_SRC_IS_A_DIRECTORY);
  });

  it('node installs skip browser and app downloads (the gateway reaches registries only); the note when the manifests name one', () => {
    const plain = [f('package.json', '{"dependencies":{"is-number":"7.0.0"}}'), f('package-lock.json', '{}')];
    const recipe = builtinRecipe(plain, detectProvider(plain));
    expect(recipe.installEnv).toEqual(
      expect.arrayContaining([{ name: 'PUPPETEER_SKIP_DOWNLOAD', value: '1' }]),
    );
    expect(installScript(recipe)).toContain("export PUPPETEER_SKIP_CHROMIUM_DOWNLOAD='1'");
    expect(recipe.notes.join('\n')).not.toMatch(/downloads of the install skipped/);
    const puppeteer = [
      f('package.json', '{"devDependencies":{"puppeteer":"^3.1.0"}}'),
      f('package-lock.json', '{}'),
    ];
    expect(builtinRecipe(puppeteer, detectProvider(puppeteer)).notes.join('\n')).toMatch(
      /downloads of the install skipped/,
    );
  });

  it('node package managers: pnpm, yarn, yarn berry, bun, npm install', () => {
    const pnpm = render([f('package.json', '{}'), f('pnpm-lock.yaml', "lockfileVersion: '9.0'\n")]);
    expect(pnpm).toContain(
      "npm install --global --prefix /deps/pm --no-audit --no-fund --loglevel=error 'pnpm@9'",
    );
    expect(pnpm).toContain('pnpm install --frozen-lockfile');
    expect(render([f('package.json', '{"packageManager":"pnpm@8.15.1"}')])).toContain("'pnpm@8.15.1'");
    const classic = render([f('package.json', '{}'), f('yarn.lock')]);
    expect(classic).toContain("'yarn@1'");
    expect(classic).toContain('yarn install --non-interactive --frozen-lockfile');
    const berry = builtinRecipe([f('package.json', '{}'), f('yarn.lock'), f('.yarnrc.yml')], {
      provider: 'node',
      packageManager: 'yarn-berry',
    });
    expect(installScript(berry)).toContain("export YARN_IGNORE_PATH='1'");
    expect(installScript(berry)).toContain("'@yarnpkg/cli-dist@4'");
    // node_modules, not PnP, in the install and in the box alike.
    expect(berry.env).toContainEqual({ name: 'YARN_NODE_LINKER', value: 'node-modules' });
    // PnP is yarn berry's default: the user is told it was replaced (not when the repo chose it).
    expect(berry.notes.join()).toContain("installed with nodeLinker node-modules, not Plug'n'Play");
    // With its release in the context, the repo's own yarn runs the install (no YARN_IGNORE_PATH).
    const release = '.yarn/releases/yarn-3.6.4.cjs';
    const own = builtinRecipe(
      [f('package.json', '{}'), f('yarn.lock'), f('.yarnrc.yml', `yarnPath: ${release}\n`), f(release, '//')],
      { provider: 'node', packageManager: 'yarn-berry' },
    );
    expect(installScript(own)).not.toContain('YARN_IGNORE_PATH');
    // The npm package only launches that release: its major, which the registry surely has.
    expect(installScript(own)).toContain("'@yarnpkg/cli-dist@3'");
    expect(own.notes.join()).toContain(
      `package manager @yarnpkg/cli-dist@3 (from the repo's release ${release}, which it launches)`,
    );
    const bun = builtinRecipe([f('package.json', '{}'), f('bun.lockb')], {
      provider: 'node',
      packageManager: 'bun',
    });
    // npm installs it; the warning is every create's (providers/node/substitution.ts), not a note.
    expect(installScript(bun)).toContain('npm install --no-audit');
    expect(bun.notes.join()).not.toMatch(/bun/);
    expect(render([f('package.json', '{}')])).toContain('npm install --no-audit');
  });

  it('python: pip --target /deps/python, local paths on PYTHONPATH and out of the context', () => {
    const files = [
      f(
        'requirements.txt',
        'requests==2.31.0\n-e ./libs/mylib\n./libs/other\nfoo @ file:./libs/third\n../outside\n',
      ),
    ];
    const text = render(files);
    expect(text).toContain("echo '-r /deps/src/requirements.txt' >> /tmp/ca-sbx-req.txt");
    expect(text).toContain(
      'python3 -m pip install --no-cache-dir --disable-pip-version-check --target /deps/python --report /tmp/ca-sbx-pip-report.json -r /tmp/ca-sbx-req2.txt',
    );
    expect(envEntries(text)).toContain(
      'PYTHONPATH="/deps/python:/work/repo/libs/mylib:/work/repo/libs/mylib/src:/work/repo/libs/other:/work/repo/libs/other/src:/work/repo/libs/third:/work/repo/libs/third/src"',
    );
    const context = contextFiles(files);
    const rewritten = context.files[0]?.content.toString() ?? '';
    expect(rewritten).toContain('requests==2.31.0');
    expect(rewritten).not.toMatch(/^(-e |\.\/|foo @)/m);
    expect(context.notes.join()).toMatch(/local path requirement/);
  });

  it('python: nothing to install when only local paths are required; poetry and uv export then pip', () => {
    const local = builtinRecipe([f('requirements.txt', './libs/mylib\n')], {
      provider: 'python',
      packageManager: 'pip',
    });
    expect(local.install).toEqual([]);
    const poetry = installScript(
      builtinRecipe([f('pyproject.toml', '[tool.poetry]\n')], {
        provider: 'python',
        packageManager: 'poetry',
      }),
    );
    expect(poetry).toContain('poetry export --without-hashes');
    expect(poetry).toContain(
      '--target /deps/python --report /tmp/ca-sbx-pip-report.json -r /tmp/ca-sbx-req2.txt',
    );
    const uv = installScript(
      builtinRecipe([f('pyproject.toml'), f('uv.lock')], { provider: 'python', packageManager: 'uv' }),
    );
    expect(uv).toContain(
      'uv export --frozen --no-hashes --no-emit-project --no-emit-workspace $(python3 /tmp/ca-sbx-reqs.py uv-args)',
    );
    expect(uv).not.toContain('--no-dev');
    // Without uv in the image, the lock's pins are installed with pip.
    expect(uv).toContain('python3 /tmp/ca-sbx-reqs.py uv-lock > /tmp/ca-sbx-req.txt');
  });

  it('python: dev and test requirement files and pyproject groups are installed too', () => {
    const script = installScript(
      builtinRecipe(
        [
          f('requirements.txt', 'six\n'),
          f('requirements-dev.txt', '-r requirements.txt\npytest\n'),
          f('requirements_test.txt', 'attrs\n'),
          f('requirements-docs.txt', 'sphinx\n'),
          f('sub/requirements-dev.txt', 'nope\n'),
          f('pyproject.toml', '[project]\nname = "x"\n[dependency-groups]\ndev = ["pytest"]\n'),
        ],
        { provider: 'python', packageManager: 'pip' },
      ),
    );
    expect(script).toContain("echo '-r /deps/src/requirements.txt'");
    expect(script).toContain("echo '-r /deps/src/requirements-dev.txt'");
    expect(script).toContain("echo '-r /deps/src/requirements_test.txt'");
    expect(script).not.toContain('requirements-docs.txt');
    expect(script).not.toContain('sub/requirements-dev.txt');
    expect(script).toContain('python3 /tmp/ca-sbx-reqs.py pyproject >> /tmp/ca-sbx-req.txt');
    // The project's own src layout imports in the box, as after `pip install -e .`.
    expect(envEntries(render([f('pyproject.toml', '[project]\nname = "x"\n')]))).toContain(
      'PYTHONPATH="/deps/python:/work/repo/src"',
    );
  });

  it("go: module cache under /deps/go, go's own -mod default, one download per go.mod", () => {
    const text = render([f('go.mod', 'module x\n'), f('go.sum'), f('libs/mylib/go.mod', 'module y\n')]);
    expect(envEntries(text)).toContain('GOPATH="/deps/go"');
    expect(envEntries(text)).toContain('GOMODCACHE="/deps/go/pkg/mod"');
    // go's default (-mod=readonly): the repo's go.mod and go.sum are never rewritten by a test run.
    expect(text).not.toContain('GOFLAGS');
    // Offline in the box; the install fetches through Go's default proxy unless a mirror is set.
    expect(envEntries(text)).toContain('GOPROXY="off"');
    expect(text).toContain("export GOPROXY='https://proxy.golang.org,direct'");
    expect(envEntries(text)).toContain('GOCACHE="/tmp/go-build"');
    expect(text).toContain("(cd 'libs/mylib' && go mod download)");
    expect(render([f('go.mod'), f('go.work')])).not.toContain('GOFLAGS');
  });

  it('go: a module with vendor/modules.txt downloads nothing and the box builds from vendor/', () => {
    const vendored = [
      f('go.mod', 'module x\n'),
      f('go.sum'),
      f('vendor/modules.txt', '# example.com/y v1.0.0\n'),
    ];
    const text = render(vendored);
    expect(envEntries(text)).toContain('GOFLAGS="-mod=vendor"');
    expect(envEntries(text)).toContain('GOPROXY="off"');
    expect(text).not.toContain('go mod download');
    expect(builtinRecipe(vendored, detectProvider(vendored)).notes).toContain(
      'go: vendored modules are not downloaded (.): vendor/ is used',
    );
    // Per module: a nested module without vendor/ still downloads, and the root's flag follows the root.
    const mixed = render([f('go.mod'), f('tools/go.mod'), f('tools/vendor/modules.txt')]);
    expect(mixed).toContain('go mod download');
    expect(mixed).not.toContain("(cd 'tools' && go mod download)");
    expect(mixed).not.toContain('GOFLAGS');
  });

  it('rust: CARGO_HOME under /deps, stub targets, cargo fetch', () => {
    const text = render([f('Cargo.toml', '[package]\nname="x"\n'), f('Cargo.lock')]);
    expect(envEntries(text)).toContain('CARGO_HOME="/deps/cargo"');
    expect(text).toContain('cargo fetch');
  });

  it('plain: no install step', () => {
    const { dockerfile, script } = build(
      'ca-sbx-base:debian',
      builtinRecipe([f('Gemfile')], detectProvider([f('Gemfile')])),
    );
    expect(dockerfile).not.toMatch(/^RUN /m);
    // The probe alone, as the step.
    expect(script).not.toContain('set -eu');
    expect(script).toContain(TOOLCHAIN_MARKER);
  });

  it('refuses an invalid base image and escapes env values', () => {
    const recipe = builtinRecipe([], { provider: 'plain' });
    expect(() => renderDockerfile('debian\nRUN evil', recipe)).toThrow(/invalid base image/);
    expect(() => renderDockerfile('--evil', recipe)).toThrow(/invalid base image/);
    expect(envValue({ name: 'X', value: 'a"b\\c$HOME' })).toBe('"a\\"b\\\\c\\$HOME"');
    expect(() => envValue({ name: 'X', value: 'a\nRUN evil' })).toThrow(/control character/);
  });

  it('keeps any script on one exec-form line', () => {
    const line = runLine('echo "a"\nRUN evil \\\n# comment');
    expect(line.split('\n')).toHaveLength(1);
    expect(JSON.parse(line.slice(4))).toEqual(['/bin/sh', '-c', 'echo "a"\nRUN evil \\\n# comment']);
  });

  it('keys the install step by the source, so the layer cache is never shared across sources', () => {
    const files = [f('package.json', '{"scripts":{"postinstall":"x"}}')];
    const recipe = builtinRecipe(files, detectProvider(files));
    const a = build('node:22', recipe, { sourceKey: 'aaaa000011112222' });
    const b = build('node:22', recipe, { sourceKey: 'bbbb000011112222' });
    // The key sits in the install step itself (the one that runs npm), not in the Dockerfile.
    expect(a.script).toContain('# ca-sbx source aaaa000011112222');
    expect(a.script).toContain('npm');
    expect(a.dockerfile).not.toContain('aaaa000011112222');
    expect(a.script).not.toEqual(b.script);
    expect(() => installCommand(recipe, { sourceKey: 'x\nRUN evil' })).toThrow(/source key/);
  });

  it('the install step trusts the CA bundle baked in the prep image; the image ENV stays without it', () => {
    const files = [f('package.json', '{}')];
    const text = render(files, 'node:22', { extraCa: true });
    // The bundle is the prep image's (root's): the deps build copies nothing of it.
    expect(text).not.toContain('extra-ca.pem /');
    for (const [name, value] of Object.entries(CA_TRUST_ENV))
      expect(text).toContain(`export ${name}='${value}'`);
    expect(text).toContain(`export NODE_EXTRA_CA_CERTS='${EXTRA_CA_PATH}'`);
    expect(text).toContain(`export SSL_CERT_FILE='${CA_BUNDLE_PATH}'`);
    expect(envEntries(text).filter((entry) => /^(NODE_EXTRA_CA_CERTS|SSL_CERT_FILE)=/.test(entry))).toEqual(
      [],
    );
    const without = render(files, 'node:22');
    expect(without).not.toContain('NODE_EXTRA_CA_CERTS');
  });

  it("the prep image bakes the user's CA bundle as root's, outside /deps, system CAs first", () => {
    const plain = renderPrepDockerfile('node:22', {});
    expect(plain).not.toContain('extra-ca.pem');
    const text = renderPrepDockerfile('node:22', {}, { extraCa: true });
    const lines = text.split('\n');
    const copy = lines.indexOf(`COPY extra-ca.pem ${EXTRA_CA_PATH}`);
    expect(copy).toBeGreaterThan(lines.indexOf('USER 0:0'));
    // One root step for the folders, the setuid strip and the bundle: no step more than without.
    const runSteps = lines.filter((line) => line.startsWith('RUN '));
    expect(runSteps).toHaveLength(1);
    expect(lines.indexOf(runSteps[0] as string)).toBeGreaterThan(copy);
    const script = JSON.parse((runSteps[0] as string).slice(4)).at(-1) as string;
    expect(script).toContain(`cat ${EXTRA_CA_PATH}; } > ${CA_BUNDLE_PATH}`);
    expect(script.indexOf('/etc/ssl/certs/ca-certificates.crt')).toBeLessThan(
      script.indexOf(`cat ${EXTRA_CA_PATH}`),
    );
    expect(script).toContain(`chown -R 0:0 ${CA_TRUST_DIR}`);
    expect(CA_TRUST_DIR.startsWith('/deps')).toBe(false);
  });

  it('--with-claude: the binary is copied as root before the install, and the probe must run it', () => {
    const claudeImage = 'ca-sbx:_claude-code-2.1.332-0123456789ab';
    const python = (files: ManifestFile[], options = { claudeImage }) =>
      render(files, 'python:3.11', options);
    const lastRun = (files: ManifestFile[]) =>
      build('python:3.11', builtinRecipe(files, detectProvider(files)), { claudeImage }).script;
    const text = build(
      'python:3.11',
      builtinRecipe([f('requirements.txt', 'six\n')], detectProvider([f('requirements.txt', 'six\n')])),
      { claudeImage },
    ).dockerfile;
    const lines = text.split('\n');
    const copy = lines.findIndex((line) => line.startsWith(`COPY --from=${claudeImage} --chown=0:0 `));
    expect(lines[copy]).toMatch(/ \/usr\/local\/bin\/claude$/);
    // Before the switch to the install user: the repo's install runs after it, as 1000, and cannot replace it.
    expect(copy).toBeLessThan(lines.indexOf('USER 1000:1000'));
    expect(envEntries(text)).toContain('DISABLE_AUTOUPDATER="1"');
    // Checked before any code of the repo runs (a failure is the step's only line), and its
    // version joins the probe's marked line before the line ends.
    const script = lastRun([f('requirements.txt', 'six\n')]);
    const check = script.indexOf('/usr/local/bin/claude --version');
    expect(check).toBeGreaterThan(-1);
    expect(check).toBeLessThan(script.indexOf('pip install'));
    expect(script).toContain('does not run on this base image');
    const pair = script.indexOf('printf "%s=%s," claude "$ca_sbx_claude"');
    expect(pair).toBeGreaterThan(script.indexOf(TOOLCHAIN_MARKER));
    expect(pair).toBeLessThan(script.indexOf('\necho\n'));
    // Without an install step the probe is the step, with the same check first.
    const bare = lastRun([f('README.md')]);
    expect(bare.indexOf('/usr/local/bin/claude --version')).toBeLessThan(bare.indexOf(TOOLCHAIN_MARKER));
    expect(bare).toContain('printf "%s=%s," claude "$ca_sbx_claude"');
    expect(python([f('requirements.txt', 'six\n')], {} as { claudeImage: string })).not.toContain('claude');
    expect(() => python([f('requirements.txt')], { claudeImage: 'x\nRUN evil' })).toThrow(
      /invalid Claude Code image/,
    );
  });

  it('the toolchain probe runs in the install step, after every process of the install is killed', () => {
    const files = [f('package.json', '{}'), f('package-lock.json', '{}')];
    const { dockerfile, script } = build('node:22', builtinRecipe(files, detectProvider(files)), {
      sourceKey: 'aaaa000011112222',
    });
    // No RUN in the Dockerfile (the root set-up is the prep image's, the install a container of
    // its own): the probe is in the install's script, no step of its own.
    expect(dockerfile).not.toMatch(/^RUN /m);
    const at = (needle: string) => script.indexOf(needle);
    // The install's lines in a subshell (their exports stay there), then the kill, then the probe.
    expect(at('\n(\nif [ -n "${HTTPS_PROXY')).toBeGreaterThan(-1);
    expect(at('npm ci')).toBeLessThan(at('\n)\n'));
    expect(at('\n)\n')).toBeLessThan(at(END_INSTALL_PROCESSES));
    expect(at(END_INSTALL_PROCESSES)).toBeLessThan(at(TOOLCHAIN_MARKER));
    expect(script).toContain(TOOLCHAIN_PROBE);
    // One stream, stderr merged first: nothing of the repo's can arrive after the probe on the other.
    expect(script.startsWith('exec 2>&1\n')).toBe(true);
    // The install runs in /deps/src without a WORKDIR step (the prep image's WORKDIR is /work/repo).
    expect(script).toContain('\ncd /deps/src\n');
    expect(dockerfile).not.toMatch(/^WORKDIR /m);
  });

  it('the Claude Code image installs the pinned package as 1000 without new privileges and checks the binary', () => {
    const text = renderClaudeDockerfile('ca-sbx-base:node', {
      extraCa: true,
      buildId: '0123456789abcdef',
      registries: { npm: 'https://npm.corp.example/' },
    });
    const install = text
      .split('\n')
      .find((line) => line.startsWith('RUN ["/usr/bin/setpriv","--no-new-privs"'));
    const script = JSON.parse(install?.slice(4) ?? '[]').at(-1) as string;
    expect(script).toContain(`'@anthropic-ai/claude-code@${CLAUDE_CODE_VERSION}'`);
    expect(script).toContain("export npm_config_registry='https://npm.corp.example/'");
    expect(script).toContain('export NODE_EXTRA_CA_CERTS=');
    expect(script).toMatch(/bin\/claude\.exe --version/);
    expect(text.indexOf('USER 1000:1000')).toBeLessThan(text.indexOf(install ?? ''));
    // No host value: no ARG, no credential variable.
    expect(text).not.toMatch(/^ARG |ANTHROPIC|CLAUDE_CODE_OAUTH/m);
  });
});

describe('envLines', () => {
  it('one ENV instruction for a provider environment (each instruction is a container and a commit)', () => {
    const text = render([f('package.json', '{}'), f('package-lock.json', '{}')], 'node:22');
    expect(text.split('\n').filter((line) => line.startsWith('ENV '))).toHaveLength(1);
  });

  it('a second instruction where one entry expands a variable set earlier, or sets a name again', () => {
    expect(
      envLines([
        { name: 'HOME', value: '/tmp' },
        { name: 'PATH', value: '/a:$PATH', expand: true },
        { name: 'X', value: '1' },
        // biome-ignore lint/suspicious/noTemplateCurlyInString: a Dockerfile variable reference
        { name: 'PATH', value: '/b:${PATH}', expand: true },
        { name: 'Y', value: '$X', expand: true },
        { name: 'Z', value: '$PATHS' },
        { name: 'Y', value: '2' },
      ]),
    ).toEqual([
      'ENV HOME="/tmp" PATH="/a:$PATH" X="1"',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a Dockerfile variable reference
      'ENV PATH="/b:${PATH}" Y="$X" Z="\\$PATHS"',
      'ENV Y="2"',
    ]);
  });

  it('refuses a name docker would not take', () => {
    expect(() => envLines([{ name: 'A B', value: '1' }])).toThrow(/invalid env name/);
  });
});
