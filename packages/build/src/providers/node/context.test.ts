import { describe, expect, it } from 'vitest';
import { isManifestPath } from '../../manifest-names.js';
import type { ManifestFile } from '../../manifests.js';
import { detectProvider } from '../../provider.js';
import {
  binPlaceholders,
  filterPnpmWorkspace,
  filterRcFile,
  filterYarnrcYml,
  localDependencyDirs,
  nodeContextFiles,
  settingName,
  stripOwnScripts,
} from './context.js';
import { planPackageManager, pnpmMajor } from './package-manager.js';

const f = (path: string, content = ''): ManifestFile => ({ path, content: Buffer.from(content) });

describe('install inputs beyond the manifest names', () => {
  it('yarn releases, plugins and patches, patch folders, pnpmfile and .yarnrc are read', () => {
    for (const path of [
      '.yarn/releases/yarn-4.5.3.cjs',
      '.yarn/plugins/@yarnpkg/plugin-workspace-tools.cjs',
      '.yarn/patches/lodash-npm-4.17.21-abc.patch',
      'patches/is-number@7.0.0.patch',
      'packages/a/patches/x.patch',
      '.pnpmfile.cjs',
      '.yarnrc',
    ]) {
      expect(isManifestPath(path), path).toBe(true);
    }
    for (const path of [
      '.yarn/cache/x.zip.txt',
      'src/x.patch',
      'patches/readme.md',
      '.yarn/install-state.gz',
    ]) {
      expect(isManifestPath(path), path).toBe(
        path === '.yarn/cache/x.zip.txt' ? false : path.includes('/patches/'),
      );
    }
  });
});

describe('the repo own lifecycle scripts', () => {
  it('are taken out of package.json; other scripts and fields stay', () => {
    const { content, removed } = stripOwnScripts(
      Buffer.from(
        JSON.stringify({
          name: 'x',
          scripts: { install: 'node-gyp-build', postinstall: 'husky', prepare: 'x', test: 'jest' },
          dependencies: { a: '1' },
        }),
      ),
    );
    expect(removed).toEqual(['install', 'postinstall', 'prepare']);
    expect(JSON.parse(content.toString())).toEqual({
      name: 'x',
      scripts: { test: 'jest' },
      dependencies: { a: '1' },
    });
    const same = Buffer.from('{"scripts":{"test":"x"}}');
    expect(stripOwnScripts(same)).toEqual({ content: same, removed: [] });
    expect(stripOwnScripts(Buffer.from('not json')).removed).toEqual([]);
  });

  it('the context notes which were skipped, for the root and workspace packages', () => {
    const { files, notes } = nodeContextFiles([
      f('package.json', '{"scripts":{"install":"node-gyp-build"}}'),
      f('packages/a/package.json', '{"scripts":{"prepare":"tsc"}}'),
    ]);
    expect(files.map((file) => file.content.toString().includes('scripts": {}'))).toEqual([true, true]);
    expect(notes.join()).toMatch(
      /own install scripts were skipped .*package\.json \(install\); packages\/a\/package\.json \(prepare\)/,
    );
  });

  it('a package the repo depends on by a file: path keeps its scripts (it installs as a dependency)', () => {
    const root = JSON.stringify({
      scripts: { postinstall: 'x' },
      dependencies: { addon: 'file:./addon', tar: 'file:vendor/t.tgz', out: 'file:../elsewhere' },
      devDependencies: { tool: 'file:tools/tool/' },
    });
    const input = [
      f('package.json', root),
      f('addon/package.json', '{"scripts":{"install":"node-gyp rebuild"}}'),
      f('tools/tool/package.json', '{"scripts":{"postinstall":"echo tool"}}'),
      f('packages/a/package.json', '{"scripts":{"prepare":"tsc"}}'),
    ];
    expect([...localDependencyDirs(input)].sort()).toEqual(['addon', 'tools/tool']);
    const { files, notes } = nodeContextFiles(input);
    const kept = (path: string) => files.find((file) => file.path === path)?.content.toString();
    expect(kept('addon/package.json')).toBe('{"scripts":{"install":"node-gyp rebuild"}}');
    expect(kept('tools/tool/package.json')).toBe('{"scripts":{"postinstall":"echo tool"}}');
    expect(kept('package.json')).not.toContain('postinstall');
    expect(kept('packages/a/package.json')).not.toContain('prepare');
    expect(notes.join()).not.toMatch(/addon/);
  });
});

describe('rc files from the repo (hostile)', () => {
  it('.npmrc: registry, credentials, TLS, proxies, paths and env expansions dropped; the rest kept', () => {
    const { text, dropped } = filterRcFile(
      [
        'registry=http://10.0.0.1:4873/',
        '@corp:registry=https://npm.corp.example/',
        '//npm.corp.example/:_authToken=secret',
        '_auth=abc',
        'strict-ssl=false',
        'cafile=/etc/evil.pem',
        'https-proxy=http://evil:3128',
        'node-options=--require /tmp/x.js',
        'script-shell=/work/repo/sh',
        'store-dir=/work/repo/.store',
        'use-node-version=16.0.0',
        // biome-ignore lint/suspicious/noTemplateCurlyInString: a literal variable reference, as the file holds it
        'email=${EMAIL}',
        '[section]',
        '; a comment',
        'legacy-peer-deps=true',
        'auto-install-peers = true',
        'node-linker=hoisted',
      ].join('\n'),
      'npmrc',
    );
    expect(text).toBe('legacy-peer-deps=true\nauto-install-peers = true\nnode-linker=hoisted\n');
    expect(dropped).toEqual([
      'registry',
      '@corp:registry',
      '//npm.corp.example/:_authToken',
      '_auth',
      'strict-ssl',
      'cafile',
      'https-proxy',
      'node-options',
      'script-shell',
      'store-dir',
      'use-node-version',
      'email',
      '[section]',
    ]);
  });

  it('.yarnrc (classic): the same rules in its `key value` form', () => {
    const { text, dropped } = filterRcFile(
      'registry "http://evil/"\n"@x:registry" "http://evil/"\nstrict-ssl false\nnetwork-timeout 600000\n',
      'yarnrc',
    );
    expect(text).toBe('network-timeout 600000\n');
    expect(dropped).toEqual(['registry', '@x:registry', 'strict-ssl']);
  });

  it('.yarnrc (classic): the `--<command>.` and `--*.` flag spellings are the same settings', () => {
    const { text, dropped } = filterRcFile(
      [
        '"--*.https-proxy" "http://evil:3128"',
        '--install.modules-folder /tmp/elsewhere',
        '--add.registry "http://evil/"',
        '--*.cafile /work/repo/ca.pem',
        '"--install.@corp:registry" "http://evil/"',
        '--*.strict-ssl false',
        '--install.frozen-lockfile true',
        '--*.network-timeout 600000',
      ].join('\n'),
      'yarnrc',
    );
    expect(text).toBe('--install.frozen-lockfile true\n--*.network-timeout 600000\n');
    expect(dropped).toHaveLength(6);
    expect(settingName('--*.https-proxy')).toBe('https-proxy');
    expect(settingName('"--install.modules-folder"')).toBe('modules-folder');
    expect(settingName('storeDir')).toBe('store-dir');
    expect(settingName('--registry')).toBe('registry');
  });

  it('pnpm-workspace.yaml: the same settings in camelCase dropped; packages, catalogs and overrides kept', () => {
    const filtered = filterPnpmWorkspace(
      [
        'packages:',
        '  - packages/*',
        'catalog:',
        '  react: ^18.0.0',
        'registry: "http://169.254.169.254/"',
        'httpsProxy: "http://evil:3128"',
        'strictSsl: false',
        'storeDir: /work/repo/.store',
        'virtualStoreDir: ../../outside',
        'nodeOptions: "--require /work/repo/x.js"',
        'scriptShell: /work/repo/sh',
        '"@corp:registry": "http://evil/"',
        '"//evil/:_authToken": abc',
        // biome-ignore lint/suspicious/noTemplateCurlyInString: a literal variable reference, as the file holds it
        'gitShallowHosts: ["${HOST}"]',
        'overrides:',
        '  foo: 1.0.0',
        'onlyBuiltDependencies:',
        '  - esbuild',
      ].join('\n'),
    );
    expect(filtered.dropped).toEqual([
      'registry',
      'httpsProxy',
      'strictSsl',
      'storeDir',
      'virtualStoreDir',
      'nodeOptions',
      'scriptShell',
      '@corp:registry',
      '//evil/:_authToken',
      'gitShallowHosts',
    ]);
    expect(filtered.text).toBe(
      'packages:\n  - packages/*\ncatalog:\n  react: ^18.0.0\noverrides:\n  foo: 1.0.0\nonlyBuiltDependencies:\n  - esbuild\n',
    );
    // Nothing to drop: the file is kept byte for byte (comments included).
    const plain = '# ours\npackages:\n  - "apps/*"\n';
    expect(filterPnpmWorkspace(plain)).toEqual({ text: plain, dropped: [] });
    expect(filterPnpmWorkspace('packages: [\n')).toMatchObject({ text: '' });
    const context = nodeContextFiles([f('pnpm-workspace.yaml', 'packages: [a]\nregistry: http://evil/\n')]);
    expect(context.files[0]?.content.toString()).toBe('packages:\n  - a\n');
    expect(context.notes.join('\n')).toMatch(/pnpm-workspace\.yaml: ignored registry/);
  });

  it('.yarnrc.yml: registry, auth, TLS, proxy and folder settings dropped; yarnPath only into the context', () => {
    const paths = new Set(['.yarn/releases/yarn-4.5.3.cjs', '.yarn/plugins/p.cjs']);
    const filtered = filterYarnrcYml(
      [
        'yarnPath: .yarn/releases/yarn-4.5.3.cjs',
        'npmRegistryServer: "http://169.254.169.254/"',
        'npmScopes:',
        '  corp:',
        // biome-ignore lint/suspicious/noTemplateCurlyInString: a literal variable reference, as the file holds it
        '    npmAuthToken: "${TOKEN}"',
        'enableStrictSsl: false',
        'httpsProxy: "http://evil:3128"',
        'cacheFolder: /work/repo/.cache',
        'plugins:',
        '  - path: .yarn/plugins/p.cjs',
        '  - path: .yarn/plugins/missing.cjs',
        '    spec: "https://evil.example/plugin.js"',
        'enableTelemetry: false',
      ].join('\n'),
      '',
      paths,
    );
    expect(filtered.yarnPath).toBe('.yarn/releases/yarn-4.5.3.cjs');
    expect(filtered.dropped).toEqual([
      'npmRegistryServer',
      'npmScopes',
      'enableStrictSsl',
      'httpsProxy',
      'cacheFolder',
      'plugins (not in the repo)',
    ]);
    expect(filtered.text).toBe(
      'yarnPath: .yarn/releases/yarn-4.5.3.cjs\nplugins:\n  - path: .yarn/plugins/p.cjs\nenableTelemetry: false\n',
    );
    // A yarnPath outside the repo or not read is dropped; invalid YAML drops the whole file.
    expect(filterYarnrcYml('yarnPath: ../../usr/bin/x.cjs\n', '', paths)).toMatchObject({
      dropped: ['yarnPath'],
    });
    expect(filterYarnrcYml('a: [\n', '', paths)).toMatchObject({ text: '' });
    expect(filterYarnrcYml('a: &x [*x]\n', '', paths).text).toBe('');
  });
});

describe('bin placeholders of the repo own packages', () => {
  it('an empty file per bin inside the package, so the package manager links it', () => {
    const files = [
      f('packages/a/package.json', '{"bin":{"a":"bin/a.js","evil":"../../../etc/x","b":"./b.js"}}'),
      f('packages/c/package.json', '{"bin":"cli.js"}'),
      f('packages/d/package.json', '{"bin":"package.json/x"}'),
    ];
    expect(binPlaceholders(files).map((file) => [file.path, file.content.length])).toEqual([
      ['packages/a/bin/a.js', 0],
      ['packages/a/b.js', 0],
      ['packages/c/cli.js', 0],
    ]);
  });
});

describe('which package manager, which version', () => {
  const plan = (files: ManifestFile[]) => planPackageManager(files, detectProvider(files));

  it('packageManager pins it; else the yarn release; else the lockfile era', () => {
    expect(plan([f('package.json', '{"packageManager":"pnpm@9.15.9+sha512.abc"}')])).toMatchObject({
      npmPackage: 'pnpm',
      spec: '9.15.9',
      source: 'packageManager',
    });
    expect(
      plan([
        f('package.json', '{}'),
        f('yarn.lock', '__metadata:\n  version: 8\n'),
        f('.yarnrc.yml', 'yarnPath: .yarn/releases/yarn-4.1.0.cjs\n'),
        f('.yarn/releases/yarn-4.1.0.cjs'),
      ]),
    ).toMatchObject({
      npmPackage: '@yarnpkg/cli-dist',
      // The version is the release's own (its file name); the npm package only launches it.
      spec: '4',
      source: "the repo's release .yarn/releases/yarn-4.1.0.cjs, which it launches",
      yarnPath: '.yarn/releases/yarn-4.1.0.cjs',
    });
    expect(
      plan([f('package.json', '{}'), f('yarn.lock', '__metadata:\n  version: 6\n  cacheKey: 8\n')]),
    ).toMatchObject({ npmPackage: '@yarnpkg/cli-dist', spec: '3' });
    expect(plan([f('package.json', '{}'), f('yarn.lock', '# yarn lockfile v1\n')])).toMatchObject({
      npmPackage: 'yarn',
      spec: '1',
    });
    expect(plan([f('package.json', '{"packageManager":"npm@10.9.0"}')])).toMatchObject({
      npmPackage: 'npm',
      spec: '10.9.0',
    });
    expect(plan([f('package.json', '{}'), f('package-lock.json', '{}')])).toEqual({
      name: 'npm',
      source: 'the base image',
    });
  });

  it('pnpm without a pin: the major its lockfile and workspace settings need', () => {
    const lock = (v: string) => f('pnpm-lock.yaml', `lockfileVersion: '${v}'\n`);
    expect(pnpmMajor([lock('9.0')]).spec).toBe('9');
    expect(pnpmMajor([lock('6.0')]).spec).toBe('8');
    expect(pnpmMajor([lock('5.4')]).spec).toBe('7');
    expect(pnpmMajor([lock('5.3')]).spec).toBe('6');
    expect(pnpmMajor([lock('9.0'), f('pnpm-workspace.yaml', 'packages: [a]\ncatalog: {}\n')]).spec).toBe('9');
    expect(
      pnpmMajor([lock('9.0'), f('pnpm-workspace.yaml', 'packages: [a]\nonlyBuiltDependencies: [esbuild]\n')]),
    ).toEqual({ spec: '10', source: 'pnpm-workspace.yaml settings (onlyBuiltDependencies)' });
    expect(
      pnpmMajor([lock('9.0'), f('pnpm-workspace.yaml', 'packages: [a]\nallowBuilds: { esbuild: true }\n')]),
    ).toEqual({ spec: '11', source: 'pnpm-workspace.yaml settings (allowBuilds)' });
    expect(pnpmMajor([]).spec).toBe('10');
  });
});
