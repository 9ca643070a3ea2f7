import { posix } from 'node:path';
import { REPO_DIR } from '@ca-sandbox/docker';
import { shellQuote } from './_utils.js';
import { npmInstallWithPeerFallback } from './install-fallbacks.js';
import { filterRequirements, manifestDirs, pythonLocalPaths } from './local-paths.js';
import { GO_VENDOR_LIST } from './manifest-names.js';
import type { ManifestFile } from './manifests.js';
import { nodeContextFiles } from './node-context.js';
import { BOX_TOOLS_BIN, NODE_FINISH, NODE_PREFIX, PM_PREFIX, USER_BIN } from './node-layout.js';
import { planPackageManager } from './package-manager.js';
import type { Detection, Provider } from './provider.js';
import { pythonInstall } from './recipe-python.js';

/** One ENV entry. `expand` lets docker substitute `$PATH`; only our own constants use it. */
export interface EnvEntry {
  name: string;
  value: string;
  expand?: boolean;
}

/** What a builder decides: the commands of the install step and the environment of the image. */
export interface InstallRecipe {
  provider: Provider;
  /** Shell lines, run by /bin/sh -eu as 1000:1000 in /deps/src; empty ⇒ no install step. */
  install: string[];
  /** ENV of the image (set before the install step, so the install uses the same paths). */
  env: EnvEntry[];
  /** Extra variables for the install step only. */
  installEnv: EnvEntry[];
  notes: string[];
  /** The repo's own lifecycle scripts left out of the install (`path (names)`): the report says them. */
  skippedScripts?: string[];
  /** The lifecycle links /work/repo/node_modules → /deps/node_modules (ESM does not read NODE_PATH). */
  linkNodeModules: boolean;
}

/** The exported environment of each provider: deps out of tree, HOME on the tmpfs. */
export function providerEnv(provider: Provider, files: readonly ManifestFile[]): EnvEntry[] {
  const env: EnvEntry[] = [{ name: 'HOME', value: '/tmp' }];
  if (provider === 'node') {
    env.push(
      { name: 'NODE_PATH', value: '/deps/node_modules' },
      {
        name: 'PATH',
        value: `${PM_PREFIX}/bin:/deps/node_modules/.bin:${BOX_TOOLS_BIN}:${USER_BIN}:$PATH`,
        expand: true,
      },
      { name: 'npm_config_update_notifier', value: 'false' },
      // node-gyp finds node's headers in the image (no download: the box is offline).
      { name: 'npm_config_nodedir', value: NODE_PREFIX },
      // A corepack shim never prompts or pins: the pinned package manager is in PM_PREFIX already.
      { name: 'COREPACK_ENABLE_DOWNLOAD_PROMPT', value: '0' },
      { name: 'COREPACK_ENABLE_AUTO_PIN', value: '0' },
      // pnpm 10+ may check the install before `pnpm run` and re-install (offline: it hangs) because
      // its state names /deps/src; the deps were installed for exactly these manifests.
      { name: 'npm_config_verify_deps_before_run', value: 'false' },
      { name: 'pnpm_config_verify_deps_before_run', value: 'false' },
    );
  } else if (provider === 'python') {
    const local = pythonLocalPaths(files).flatMap((rel) => [`${REPO_DIR}/${rel}`, `${REPO_DIR}/${rel}/src`]);
    // The project itself, as `pip install -e .` gives a developer: a src layout's packages import.
    const project = files.some((f) => ['pyproject.toml', 'setup.py', 'setup.cfg'].includes(f.path))
      ? [`${REPO_DIR}/src`]
      : [];
    env.push(
      { name: 'PYTHONPATH', value: ['/deps/python', ...local, ...project].join(':') },
      { name: 'PATH', value: '/deps/python/bin:$PATH', expand: true },
      { name: 'PIP_DISABLE_PIP_VERSION_CHECK', value: '1' },
    );
  } else if (provider === 'go') {
    const workspace = files.some((file) => file.path === 'go.work');
    env.push(
      { name: 'GOPATH', value: '/deps/go' },
      { name: 'GOMODCACHE', value: '/deps/go/pkg/mod' },
      { name: 'GOCACHE', value: '/tmp/go-build' },
      { name: 'GOTOOLCHAIN', value: 'local' },
      // The modules were downloaded at install: in the box go never fetches (its network is off anyway).
      { name: 'GOPROXY', value: 'off' },
      { name: 'PATH', value: '/deps/go/bin:$PATH', expand: true },
    );
    // go refuses -mod=mod in workspace mode; outside it, -mod=mod lets a replace into the repo
    // resolve. A module that vendors its dependencies builds from vendor/ (what go picks by itself
    // for go >= 1.14; older go.mod files need the flag), never from the empty module cache.
    if (!workspace) env.push({ name: 'GOFLAGS', value: vendors(files, '') ? '-mod=vendor' : '-mod=mod' });
  } else if (provider === 'rust') {
    env.push(
      { name: 'CARGO_HOME', value: '/deps/cargo' },
      { name: 'PATH', value: '$PATH:/deps/cargo/bin', expand: true },
    );
  }
  return env;
}

/**
 * The manifests as they go into the build context: requirements*.txt lose their local-path
 * entries (the source is not in the context; those paths resolve from /work/repo at run time);
 * package.json files lose the repo's own lifecycle scripts and rc files the settings a repo never
 * chooses (see node-context.ts).
 */
export function contextFiles(files: readonly ManifestFile[]): {
  files: ManifestFile[];
  notes: string[];
  skippedScripts: string[];
} {
  const notes: string[] = [];
  const out = files.map((file) => {
    if (!/^requirements.*\.txt$/.test(posix.basename(file.path))) return file;
    const { text, removed } = filterRequirements(file.content.toString('utf8'));
    if (removed.length === 0) return file;
    notes.push(
      `${file.path}: ${removed.length} local path requirement(s) not installed; they resolve from ${REPO_DIR} via PYTHONPATH`,
    );
    return { path: file.path, content: Buffer.from(text, 'utf8') };
  });
  const node = nodeContextFiles(out);
  return { files: node.files, notes: [...notes, ...node.notes], skippedScripts: node.skippedScripts };
}

const NODE_INSTALL_FLAGS = '--no-audit --no-fund --loglevel=error';

function globalTool(npmPackage: string, spec: string): string {
  return `npm install --global --prefix ${PM_PREFIX} ${NODE_INSTALL_FLAGS} ${shellQuote(`${npmPackage}@${spec}`)}`;
}

// Image ENV of a yarn berry repo, for the install and the box alike: node_modules (not PnP, whose
// loader would live in /deps), no telemetry.
const BERRY_ENV: EnvEntry[] = [
  { name: 'YARN_NODE_LINKER', value: 'node-modules' },
  { name: 'YARN_ENABLE_TELEMETRY', value: '0' },
];

/**
 * Dependencies that download a browser or an app binary from a CDN in their postinstall
 * (puppeteer, playwright, cypress, electron): the gateway reaches the registries only, so that
 * download failed the whole install (jashkenas/coffeescript's puppeteer, corpus trial). They are
 * told to skip it, as their own settings allow; the box could not reach a CDN to fetch it later
 * either.
 */
export const DOWNLOAD_SKIPS: readonly EnvEntry[] = [
  { name: 'PUPPETEER_SKIP_DOWNLOAD', value: '1' },
  { name: 'PUPPETEER_SKIP_CHROMIUM_DOWNLOAD', value: '1' },
  { name: 'PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD', value: '1' },
  { name: 'CYPRESS_INSTALL_BINARY', value: '0' },
  { name: 'ELECTRON_SKIP_BINARY_DOWNLOAD', value: '1' },
];
const DOWNLOADING_PACKAGES = /["'/@](?:puppeteer|playwright|playwright-core|cypress|electron)["'@:/]/;

function nodeInstall(
  files: readonly ManifestFile[],
  detection: Detection,
): Pick<InstallRecipe, 'install' | 'installEnv' | 'notes' | 'env'> {
  const has = (name: string) => files.some((file) => file.path === name);
  const pm = planPackageManager(files, detection);
  const notes: string[] = [];
  const installEnv: EnvEntry[] = [...DOWNLOAD_SKIPS];
  if (files.some((file) => DOWNLOADING_PACKAGES.test(file.content.toString('utf8'))))
    notes.push(
      'browser and app downloads of the install skipped (puppeteer, playwright, cypress, electron: the gateway reaches registries only); tests that need such a browser need it in the base image',
    );
  const env: EnvEntry[] = [];
  const install: string[] = [];
  if (pm.npmPackage && pm.spec) {
    install.push(globalTool(pm.npmPackage, pm.spec));
    notes.push(
      `package manager ${pm.npmPackage}@${pm.spec} (from ${pm.source}) installed in ${PM_PREFIX}/bin`,
    );
  }
  switch (pm.name) {
    case 'pnpm':
      install.push(`pnpm install ${has('pnpm-lock.yaml') ? '--frozen-lockfile' : ''}`.trim());
      break;
    case 'yarn':
      install.push(`yarn install --non-interactive ${has('yarn.lock') ? '--frozen-lockfile' : ''}`.trim());
      break;
    case 'yarn-berry': {
      env.push(...BERRY_ENV);
      const rc = files.find((file) => file.path === '.yarnrc.yml')?.content.toString('utf8') ?? '';
      if (!/^nodeLinker:\s*["']?node-modules["']?\s*$/m.test(rc))
        notes.push(
          "yarn berry: installed with nodeLinker node-modules, not Plug'n'Play (its loader would live in the read-only image); yarn in the box agrees",
        );
      installEnv.push(
        { name: 'YARN_ENABLE_IMMUTABLE_INSTALLS', value: 'false' },
        { name: 'YARN_ENABLE_GLOBAL_CACHE', value: 'false' },
        { name: 'YARN_CACHE_FOLDER', value: '/tmp/ca-sbx-yarn-cache' },
      );
      // The repo's own release (yarnPath) runs the install when it is in the context; the
      // launcher in /deps/pm hands over to it in the box as well.
      if (!pm.yarnPath) installEnv.push({ name: 'YARN_IGNORE_PATH', value: '1' });
      install.push('yarn install');
      break;
    }
    default: {
      if (pm.name === 'bun') notes.push('bun is not available in the build: dependencies installed with npm');
      const lock = has('package-lock.json') || has('npm-shrinkwrap.json');
      // A lockfile written by an older npm (or with --legacy-peer-deps) fails under npm 10 with
      // ERESOLVE; its developers install with --legacy-peer-deps: so does the install, then only.
      install.push(...npmInstallWithPeerFallback(`npm ${lock ? 'ci' : 'install'} ${NODE_INSTALL_FLAGS}`));
    }
  }
  const root = files.find((file) => file.path === 'package.json')?.content.toString('utf8') ?? '';
  if (has('pnpm-workspace.yaml') || /"workspaces"\s*:/.test(root)) {
    notes.push(
      'workspace packages: each gets its node_modules; links between them resolve to their source in /work/repo',
    );
  }
  return { install: [...install, ...NODE_FINISH], installEnv, notes, env };
}

/** Go's own default GOPROXY, for the install step. */
export const GO_DEFAULT_PROXY = 'https://proxy.golang.org,direct';

/** Whether the Go module in `dir` ('' = the root) carries its dependencies in vendor/. */
function vendors(files: readonly ManifestFile[], dir: string): boolean {
  const list = dir ? `${dir}/${GO_VENDOR_LIST}` : GO_VENDOR_LIST;
  return files.some((file) => file.path === list);
}

/** `go mod download` in each module directory, but those that vendor their dependencies. */
function goInstall(files: readonly ManifestFile[]): string[] {
  return manifestDirs(files, 'go.mod')
    .filter((dir) => !vendors(files, dir))
    .map((dir) => (dir ? `(cd ${shellQuote(dir)} && go mod download)` : 'go mod download'));
}

function goNotes(files: readonly ManifestFile[]): string[] {
  const vendored = manifestDirs(files, 'go.mod').filter((dir) => vendors(files, dir));
  return [
    'go replace directives into the repo resolve from /work/repo at run time',
    ...(vendored.length
      ? [
          `go: vendored modules are not downloaded (${vendored.map((dir) => dir || '.').join(', ')}): vendor/ is used`,
        ]
      : []),
  ];
}

function rustInstall(files: readonly ManifestFile[]): string[] {
  // cargo wants a target per package; the context has manifests only, so stub one where none is.
  const stubs = manifestDirs(files, 'Cargo.toml').map(
    (dir) =>
      `(cd ${shellQuote(dir || '.')} && mkdir -p src && { [ -e src/main.rs ] || [ -e src/lib.rs ] || : > src/lib.rs; })`,
  );
  return files.some((file) => file.path === 'Cargo.toml') ? [...stubs, 'cargo fetch'] : [];
}

/** The built-in builder's recipe for a detected provider. */
export function builtinRecipe(files: readonly ManifestFile[], detection: Detection): InstallRecipe {
  const env = providerEnv(detection.provider, files);
  const base = { provider: detection.provider, env, linkNodeModules: false };
  switch (detection.provider) {
    case 'node': {
      const part = nodeInstall(files, detection);
      return { ...base, ...part, env: [...env, ...part.env], linkNodeModules: true };
    }
    case 'python': {
      const paths = pythonLocalPaths(files);
      const notes = paths.length
        ? [`local path dependencies on PYTHONPATH from ${REPO_DIR}: ${paths.join(', ')}`]
        : [];
      const part = pythonInstall(files, detection);
      return { ...base, ...part, notes: [...notes, ...part.notes] };
    }
    case 'go':
      return {
        ...base,
        install: goInstall(files),
        // The image's GOPROXY is off; the install fetches (a configured mirror overrides this).
        installEnv: [{ name: 'GOPROXY', value: GO_DEFAULT_PROXY }],
        notes: goNotes(files),
      };
    case 'rust':
      return { ...base, install: rustInstall(files), installEnv: [], notes: [] };
    default:
      return {
        ...base,
        install: [],
        installEnv: [],
        notes: ['no known provider: the base image without dependencies'],
      };
  }
}
