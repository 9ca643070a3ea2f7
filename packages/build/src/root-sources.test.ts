import { describe, expect, it } from 'vitest';
import {
  chooseRootProvider,
  parseRootSourcesLine,
  ROOT_SOURCE_EXTENSIONS,
  ROOT_SOURCES_MARKER,
  ROOT_SOURCES_MAX_BYTES,
} from './root-sources.js';

const line = (...tokens: string[]) => `${ROOT_SOURCES_MARKER} ${tokens.map((t) => `${t} `).join('')}`;

describe('parseRootSourcesLine', () => {
  it('counts one token per file', () => {
    expect(parseRootSourcesLine(line('py', 'py', 'mjs', 'go'))).toEqual({ py: 2, mjs: 1, go: 1 });
    expect(parseRootSourcesLine(`${ROOT_SOURCES_MARKER} `)).toEqual({});
  });

  it('counts nothing without the marker, and ignores unknown and cut tokens', () => {
    expect(parseRootSourcesLine('py py ')).toEqual({});
    expect(parseRootSourcesLine(`x${line('py')}`)).toEqual({});
    expect(parseRootSourcesLine(line('py', 'sh', 'PY', '../py', 'py\u0000'))).toEqual({ py: 1 });
    // The last token has no space: the byte cap may have cut `mjs` to `mj`, or `js` out of `cjs`.
    expect(parseRootSourcesLine(`${line('py')}js`)).toEqual({ py: 1 });
  });

  it('reads at most the capped bytes', () => {
    const many = line(...Array.from({ length: ROOT_SOURCES_MAX_BYTES }, () => 'go'));
    const counts = parseRootSourcesLine(many);
    expect(counts.go).toBe(Math.floor(ROOT_SOURCES_MAX_BYTES / 3));
  });
});

describe('chooseRootProvider', () => {
  it('picks the provider of the root source files and says why', () => {
    expect(chooseRootProvider({ py: 1 })).toEqual({
      provider: 'python',
      files: 1,
      extensions: ['py'],
      reason: 'no manifest; 1 .py file at the root: the python toolchain image',
    });
    expect(chooseRootProvider({ mjs: 2, ts: 1 })?.reason).toBe(
      'no manifest; 3 .mjs/.ts files at the root: the node toolchain image',
    );
    expect(chooseRootProvider({ go: 4 })?.provider).toBe('go');
    expect(chooseRootProvider({})).toBeUndefined();
    expect(chooseRootProvider({ py: 0 })).toBeUndefined();
  });

  it('a mix goes to the most files, summed over a provider’s extensions', () => {
    expect(chooseRootProvider({ py: 3, js: 2 })?.provider).toBe('python');
    expect(chooseRootProvider({ py: 3, js: 2, cjs: 2 })?.provider).toBe('node');
    expect(chooseRootProvider({ py: 1, go: 2 })?.provider).toBe('go');
  });

  it('a tie goes to the first of node, python, go', () => {
    expect(chooseRootProvider({ py: 2, js: 2 })?.provider).toBe('node');
    expect(chooseRootProvider({ py: 2, go: 2 })?.provider).toBe('python');
    expect(chooseRootProvider({ py: 1, go: 1, ts: 1 })?.provider).toBe('node');
  });

  it('knows every extension of the README', () => {
    expect([...ROOT_SOURCE_EXTENSIONS].sort()).toEqual(['cjs', 'go', 'js', 'mjs', 'py', 'ts']);
  });
});
