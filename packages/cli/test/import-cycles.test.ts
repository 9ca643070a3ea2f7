// No import cycle between the source files of any package: in a cycle, whichever module loads first
// sees the others' bindings uninitialised. One did ship (build-log → install-scripts → … → errors →
// install-log → build-log): loaded in that order inside the CLI bundle, the install-scripts walk's
// marker was not yet set and every dependency's install scripts went unrecorded. Type-only imports
// are erased at build time and cannot make one.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const PACKAGES = fileURLToPath(new URL('../../', import.meta.url));

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return name.endsWith('.ts') && !name.endsWith('.test.ts') && !name.endsWith('.d.ts') ? [path] : [];
  });
}

/** The package-relative modules `file` imports at run time (`import type` and `export type` left out). */
function runtimeImports(file: string, text = readFileSync(file, 'utf8')): string[] {
  const found: string[] = [];
  const statement = /^\s*(?:import|export)\s+(type\s+)?(?:[^'";]*?\s*from\s*)?['"](\.{1,2}\/[^'"]+)['"]/gms;
  for (const match of text.matchAll(statement)) {
    if (match[1]) continue;
    const target = resolve(dirname(file), (match[2] ?? '').replace(/\.js$/, '.ts'));
    found.push(target);
  }
  return found;
}

/** Each file's runtime imports among `files`. */
function importGraph(files: string[]): Map<string, string[]> {
  return new Map(files.map((file) => [file, runtimeImports(file).filter((to) => files.includes(to))]));
}

/** Every cycle's files in order (each found once, from the first of its files visited). */
function cycles(edges: Map<string, string[]>): string[][] {
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const found: string[][] = [];
  const visit = (file: string) => {
    state.set(file, 'open');
    stack.push(file);
    for (const next of edges.get(file) ?? []) {
      if (state.get(next) === 'open') found.push(stack.slice(stack.indexOf(next)));
      else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(file, 'done');
  };
  for (const file of edges.keys()) if (!state.has(file)) visit(file);
  return found;
}

describe('import cycles', () => {
  const packages = readdirSync(PACKAGES).filter((name) => {
    try {
      return statSync(join(PACKAGES, name, 'src')).isDirectory();
    } catch {
      return false;
    }
  });

  it.each(packages)('none between the source files of %s', (name) => {
    const src = join(PACKAGES, name, 'src');
    const shown = cycles(importGraph(sourceFiles(src))).map((cycle) =>
      cycle.map((file) => relative(src, file)).join(' → '),
    );
    expect(shown).toEqual([]);
  });

  it('none between the packages (their @ca-sandbox dependencies)', () => {
    const edges = new Map(
      packages.map((name): [string, string[]] => {
        const manifest = JSON.parse(readFileSync(join(PACKAGES, name, 'package.json'), 'utf8')) as {
          name: string;
          dependencies?: Record<string, string>;
        };
        const deps = Object.keys(manifest.dependencies ?? {}).filter((dep) => dep.startsWith('@ca-sandbox/'));
        // A package naming itself is a cycle of one.
        return [manifest.name, deps];
      }),
    );
    expect(cycles(edges)).toEqual([]);
  });

  it('the check: a ring of runtime imports is a cycle, type-only imports are none', () => {
    expect(
      cycles(
        new Map([
          ['a', ['b']],
          ['b', ['c']],
          ['c', ['a']],
          ['d', ['a']],
        ]),
      ),
    ).toEqual([['a', 'b', 'c']]);
    expect(
      cycles(
        new Map([
          ['a', ['b']],
          ['b', []],
        ]),
      ),
    ).toEqual([]);
    const text = [
      "import { x } from './x.js';",
      "import type { T } from './t.js';",
      "export type { U } from './u.js';",
      "export { y } from './y.js';",
      "import './side-effect.js';",
      "import {\n  type A,\n  b,\n} from './mixed.js';",
      "import { z } from 'zod';",
      "  export * from'./star.js';",
    ].join('\n');
    expect(runtimeImports('/p/src/f.ts', text)).toEqual([
      '/p/src/x.ts',
      '/p/src/y.ts',
      '/p/src/side-effect.ts',
      '/p/src/mixed.ts',
      '/p/src/star.ts',
    ]);
  });
});
