import { describe, expect, it } from 'vitest';
import type { ManifestFile } from './manifests.js';
import { detectProvider, packageManagerField } from './provider.js';

const f = (path: string, content = ''): ManifestFile => ({ path, content: Buffer.from(content) });

describe('detectProvider', () => {
  it('detects node and its package manager by lockfile', () => {
    expect(detectProvider([f('package.json', '{}'), f('package-lock.json')])).toEqual({
      provider: 'node',
      packageManager: 'npm',
    });
    expect(detectProvider([f('package.json', '{}'), f('pnpm-lock.yaml')]).packageManager).toBe('pnpm');
    expect(
      detectProvider([f('package.json', '{}'), f('yarn.lock', '# yarn lockfile v1\n')]).packageManager,
    ).toBe('yarn');
    expect(
      detectProvider([f('package.json', '{}'), f('yarn.lock', '__metadata:\n  version: 8\n')]).packageManager,
    ).toBe('yarn-berry');
    expect(detectProvider([f('package.json', '{}'), f('yarn.lock'), f('.yarnrc.yml')]).packageManager).toBe(
      'yarn-berry',
    );
    expect(detectProvider([f('package.json', '{}'), f('bun.lockb')]).packageManager).toBe('bun');
    expect(detectProvider([f('package.json', '{}')]).packageManager).toBe('npm');
  });

  it('prefers packageManager of package.json, validating its version', () => {
    expect(
      detectProvider([
        f('package.json', '{"packageManager":"pnpm@9.1.0+sha512.abc"}'),
        f('package-lock.json'),
      ]),
    ).toEqual({
      provider: 'node',
      packageManager: 'pnpm',
      packageManagerVersion: '9.1.0',
    });
    expect(detectProvider([f('package.json', '{"packageManager":"yarn@4.1.0"}')]).packageManager).toBe(
      'yarn-berry',
    );
    expect(detectProvider([f('package.json', '{"packageManager":"yarn@1.22.19"}')]).packageManager).toBe(
      'yarn',
    );
    expect(packageManagerField(Buffer.from('{"packageManager":"pnpm@$(rm -rf /)"}'))).toEqual({
      name: 'pnpm',
    });
    expect(packageManagerField(Buffer.from('{"packageManager":"evil@1.0.0"}'))).toBeUndefined();
    expect(packageManagerField(Buffer.from('not json'))).toBeUndefined();
    expect(packageManagerField(Buffer.from('null'))).toBeUndefined();
  });

  it('detects python: pip, poetry, uv, pipenv', () => {
    expect(detectProvider([f('requirements.txt')])).toEqual({ provider: 'python', packageManager: 'pip' });
    expect(detectProvider([f('pyproject.toml', '[tool.poetry]\nname="x"\n')]).packageManager).toBe('poetry');
    expect(detectProvider([f('pyproject.toml'), f('poetry.lock')]).packageManager).toBe('poetry');
    expect(detectProvider([f('pyproject.toml'), f('uv.lock')]).packageManager).toBe('uv');
    expect(detectProvider([f('Pipfile')]).packageManager).toBe('pipenv');
    expect(detectProvider([f('setup.py')]).packageManager).toBe('pip');
  });

  it('detects go and rust, else plain', () => {
    expect(detectProvider([f('go.mod'), f('go.sum')])).toEqual({ provider: 'go', packageManager: 'go' });
    expect(detectProvider([f('Cargo.toml'), f('Cargo.lock')])).toEqual({
      provider: 'rust',
      packageManager: 'cargo',
    });
    expect(detectProvider([])).toEqual({ provider: 'plain' });
    expect(detectProvider([f('Gemfile'), f('.tool-versions')])).toEqual({ provider: 'plain' });
  });

  it('decides by the repo root only, in the order node, python, go, rust', () => {
    expect(detectProvider([f('sub/package.json', '{}')]).provider).toBe('plain');
    expect(detectProvider([f('go.mod'), f('package.json', '{}')]).provider).toBe('node');
    expect(detectProvider([f('Cargo.toml'), f('requirements.txt')]).provider).toBe('python');
  });
});
