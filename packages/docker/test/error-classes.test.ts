// Every error class of every package derives from the one base (CaSandboxError) and states its
// code and kind: the CLI maps errors to exit codes and JSON through the base alone, so a class
// outside it would be reported as INTERNAL. Two views: the built barrels (what callers get) and
// the sources (classes a barrel does not export, such as the CLI's own).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

// The built module: the barrels below import this same file, so `instanceof` is meaningful. Loaded
// by path, typed from the source: CI typechecks a fresh clone before anything is built.
const { CaSandboxError, ERROR_KINDS, isCaSandboxError } = (await import(
  pathToFileURL(fileURLToPath(new URL('../dist/contracts.js', import.meta.url))).href
)) as typeof import('../src/contracts.js');

const PACKAGES = fileURLToPath(new URL('../../', import.meta.url));
const packageDirs = readdirSync(PACKAGES, { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => join(PACKAGES, entry.name));

/** Constructor arguments for the classes whose constructor reads more than strings. */
const ARGUMENTS: Record<string, unknown[]> = {
  DockerCommandError: [['rm', 'x'], 1, 'Error: no such container'],
  DockerEngineError: ['network create', 409, 'network with name x already exists'],
  DockerNotFoundError: ['container inspect', 'No such container: x'],
  FirewallCommandError: [['iptables', '-S'], 1, 'denied'],
  ManifestLimitError: ['maxFiles', 1, '2 files'],
  BaseImageMissingError: ['ca-sbx-base:node', 'node'],
  ImageBuildError: ['ca-sbx:x', 1, 'out', undefined, { logFile: '/tmp/x.log' }],
  ImageBuildTimeoutError: ['ca-sbx:x', 60_000, 'out'],
  DepsImageTooLargeError: ['ca-sbx:x', 1024, 2048, 'install'],
  RuntimeUnavailableError: ['runsc', ['runc']],
  IsolationViolationError: ['ca-sbx-x', [{ id: 'user', expected: '1000:1000', seen: '0:0' }]],
  InstallConfinementError: ['ca-sbx:x', [{ id: 'non-root-user', expected: 'uid 1000', seen: 'uid 0' }]],
  LimitError: ['memory', 'too small'],
  CheckoutTooLargeError: ['entries', { maxEntries: 1, maxBytes: 1 }, { entries: 2, bytes: 2 }],
  CreateCleanupError: ['x', new Error('cause'), ['ca-sbx-x']],
  NotABoxError: ['x', 'ca-sbx-x', 'helper'],
  LeftoversError: [['ca-sbx-x']],
  PrerequisiteError: ['missing', 'install it'],
  // The CLI's generic errors take their code as an argument.
  UsageError: ['bad', 'USAGE'],
  OperationFailedError: ['failed', 'FAILED'],
};

/** Each package's built main barrel (the CLI's tsc output, not its minified bundle). */
async function barrels(): Promise<Array<{ name: string; exports: Record<string, unknown> }>> {
  const found = [];
  for (const dir of packageDirs) {
    const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
      name: string;
      exports?: Record<string, unknown>;
    };
    if (!manifest.exports?.['.']) continue;
    const exports = (await import(pathToFileURL(join(dir, 'dist', 'index.js')).href)) as Record<
      string,
      unknown
    >;
    found.push({ name: manifest.name, exports });
  }
  return found;
}

function isErrorClass(value: unknown): value is new (...args: unknown[]) => Error {
  return typeof value === 'function' && value.prototype instanceof Error;
}

describe('the error base', () => {
  it('every error class a barrel exports extends CaSandboxError and has a code and a kind', async () => {
    const seen: string[] = [];
    for (const { name, exports } of await barrels()) {
      for (const [exported, value] of Object.entries(exports)) {
        if (!isErrorClass(value) || (value as unknown) === CaSandboxError) continue;
        seen.push(`${name}:${exported}`);
        expect(value.prototype, `${name} ${exported}`).toBeInstanceOf(CaSandboxError);
        const error = new value(...(ARGUMENTS[exported] ?? ['a detail', 'another detail'])) as InstanceType<
          typeof CaSandboxError
        >;
        expect(isCaSandboxError(error), `${name} ${exported}`).toBe(true);
        expect(error.code, `${name} ${exported}`).toMatch(/^[A-Z][A-Z0-9_]*$/);
        expect(ERROR_KINDS, `${name} ${exported}`).toContain(error.kind);
        expect(error.name, `${name} ${exported}`).toBe(exported);
        if (error.kind === 'prerequisite') expect(error.hint, `${name} ${exported}`).toBeTruthy();
      }
    }
    // docker, config, mounts, network, run, build, lifecycle and the CLI all export theirs.
    expect(new Set(seen.map((entry) => entry.split(':')[0])).size).toBeGreaterThanOrEqual(8);
    expect(seen.length).toBeGreaterThanOrEqual(50);
  });

  it('every error class in the sources derives from the base (directly or through one of ours)', () => {
    const classes = new Map<string, string>();
    const walk = (dir: string): void => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) walk(path);
        else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts')) {
          for (const match of readFileSync(path, 'utf8').matchAll(/\bclass (\w+) extends (\w+)/g)) {
            classes.set(match[1] as string, match[2] as string);
          }
        }
      }
    };
    for (const dir of packageDirs) if (existsSync(join(dir, 'src'))) walk(join(dir, 'src'));
    const errors = [...classes].filter(([name]) => name.endsWith('Error') && name !== 'CaSandboxError');
    const derives = (name: string, depth = 0): boolean => {
      const parent = classes.get(name);
      if (parent === 'CaSandboxError') return true;
      return parent !== undefined && depth < 5 && derives(parent, depth + 1);
    };
    expect(errors.filter(([name]) => !derives(name))).toEqual([]);
    expect(errors.length).toBeGreaterThanOrEqual(57);
  });

  it('is recognised across copies of its module (the exec fast path loads two bundles)', () => {
    const branded = (kind: string) =>
      Object.assign(Object.create({ [Symbol.for('ca-sandbox.error')]: true }), {
        code: 'DOCKER_UNAVAILABLE',
        kind,
        message: 'x',
      });
    expect(isCaSandboxError(branded('prerequisite'))).toBe(true);
    expect(isCaSandboxError(branded('weird'))).toBe(false);
    expect(isCaSandboxError(Object.assign(new Error('x'), { code: 'X', kind: 'usage' }))).toBe(false);
    expect(isCaSandboxError(undefined)).toBe(false);
  });
});
