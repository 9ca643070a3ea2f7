import { shellQuote } from '../_utils.js';
import { manifestDirs } from '../local-paths.js';
import { GO_VENDOR_LIST } from '../manifest-names.js';
import type { ManifestFile } from '../manifests.js';
import type { ProviderRecipe } from './provider-recipe.js';

/** Go: `go mod download` into /deps/go; in the box go never fetches. */
export const goRecipe: ProviderRecipe = {
  env(files) {
    const workspace = files.some((file) => file.path === 'go.work');
    return [
      { name: 'GOPATH', value: '/deps/go' },
      { name: 'GOMODCACHE', value: '/deps/go/pkg/mod' },
      { name: 'GOCACHE', value: '/tmp/go-build' },
      { name: 'GOTOOLCHAIN', value: 'local' },
      // The modules were downloaded at install: in the box go never fetches (its network is off anyway).
      { name: 'GOPROXY', value: 'off' },
      { name: 'PATH', value: '/deps/go/bin:$PATH', expand: true },
      // go's own default otherwise (-mod=readonly): running the repo's tests never rewrites its
      // go.mod or go.sum (-mod=mod added a `go` line to a go.mod without one), and a replace into
      // the repo resolves as on a developer's machine. A module that vendors its dependencies
      // builds from vendor/ (what go picks by itself for go >= 1.14; older go.mod files need the
      // flag, which go refuses in workspace mode), never from the empty module cache.
      ...(!workspace && vendors(files, '') ? [{ name: 'GOFLAGS', value: '-mod=vendor' }] : []),
    ];
  },
  install: (files) => ({
    install: goInstall(files),
    // The image's GOPROXY is off; the install fetches (a configured mirror overrides this).
    installEnv: [{ name: 'GOPROXY', value: GO_DEFAULT_PROXY }],
    notes: goNotes(files),
  }),
  linkNodeModules: false,
};

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
