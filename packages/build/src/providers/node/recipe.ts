import { shellQuote } from '../../_utils.js';
import { npmInstallWithPeerFallback } from '../../install-fallbacks.js';
import type { ManifestFile } from '../../manifests.js';
import type { Detection } from '../../provider.js';
import type { EnvEntry } from '../../recipe.js';
import type { ProviderInstall, ProviderRecipe } from '../provider-recipe.js';
import { BOX_TOOLS_BIN, NODE_FINISH, NODE_PREFIX, PM_PREFIX, USER_BIN } from './layout.js';
import { LOCKFILE_HASHES } from './lockfiles.js';
import { planPackageManager } from './package-manager.js';

/** Node: the pinned package manager, its frozen install, deps under /deps/src linked into the box. */
export const nodeRecipe: ProviderRecipe = {
  env: () => [
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
  ],
  install: nodeInstall,
  linkNodeModules: true,
};

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

function nodeInstall(files: readonly ManifestFile[], detection: Detection): ProviderInstall {
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
      // bun: npm installs it (bunSubstitution says so on every create, a cache hit's too).
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
  return { install: [...install, ...NODE_FINISH], afterInstall: [LOCKFILE_HASHES], installEnv, notes, env };
}
