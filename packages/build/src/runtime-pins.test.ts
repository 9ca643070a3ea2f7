import { describe, expect, it } from 'vitest';
import type { ManifestFile } from './manifests.js';
import { pinMet, runtimeMismatches, runtimePins } from './runtime-pins.js';

const file = (path: string, content: string): ManifestFile => ({ path, content: Buffer.from(content) });
const NODE_BOX = { node: '22.23.5', npm: '10.9.9' };

describe('runtimePins', () => {
  it('reads the bare versions the tools read, at the root only', () => {
    expect(
      runtimePins([
        file('.nvmrc', 'v18.17.0\n# a comment line nvm ignores\n'),
        file('packages/a/.nvmrc', '16\n'),
        file('.python-version', '3.12\n'),
        file('go.mod', 'module example.com/m\n\ngo 1.28.1 // the least\n\ntoolchain go1.29.0\n'),
      ]),
    ).toEqual([
      { tool: 'node', version: '18.17.0', from: '.nvmrc', rule: 'same' },
      { tool: 'python3', version: '3.12', from: '.python-version', rule: 'same' },
      { tool: 'go', version: '1.28.1', from: 'go.mod', rule: 'at-least' },
    ]);
  });

  it("takes volta's node pin and asdf's .tool-versions (its first version per tool)", () => {
    expect(
      runtimePins([
        file('package.json', JSON.stringify({ name: 'x', volta: { node: '20.11.1' } })),
        file('.tool-versions', 'nodejs 18.19.0 20.0.0\npython 3.10.4 # asdf\ngolang 1.22.0\nruby 3.3.0\n'),
      ]),
    ).toEqual([
      { tool: 'node', version: '20.11.1', from: 'package.json volta.node', rule: 'same' },
      { tool: 'node', version: '18.19.0', from: '.tool-versions', rule: 'same' },
      { tool: 'python3', version: '3.10.4', from: '.tool-versions', rule: 'same' },
      { tool: 'go', version: '1.22.0', from: '.tool-versions', rule: 'at-least' },
    ]);
  });

  it('skips aliases and anything that is not a bare version (the files are the repo’s)', () => {
    expect(
      runtimePins([
        file('.nvmrc', 'lts/*\n'),
        file('.node-version', '\u001b]0;owned\u0007 18\n'),
        file('.python-version', 'system\n'),
        file('package.json', '{ not json'),
        file('go.mod', 'module m\ngo 1.28; rm -rf /\n'),
        file('.tool-versions', `nodejs ${'9'.repeat(60)}\n`),
      ]),
    ).toEqual([]);
  });
});

describe('pinMet', () => {
  it('node: the same major; python: the same major.minor; go: at least the version', () => {
    const pin = (tool: 'node' | 'python3' | 'go', version: string) =>
      ({ tool, version, from: 'x', rule: tool === 'go' ? 'at-least' : 'same' }) as const;
    expect(pinMet(pin('node', '22.12.0'), '22.23.5')).toBe(true);
    expect(pinMet(pin('node', '18'), '22.23.5')).toBe(false);
    expect(pinMet(pin('python3', '3.11'), '3.11.2')).toBe(true);
    expect(pinMet(pin('python3', '3.12.1'), '3.11.2')).toBe(false);
    expect(pinMet(pin('python3', '3'), '3.11.2')).toBe(true);
    expect(pinMet(pin('go', '1.22.3'), '1.27.4')).toBe(true);
    expect(pinMet(pin('go', '1.27.4'), '1.27.4')).toBe(true);
    expect(pinMet(pin('go', '1.27.5'), '1.27.4')).toBe(false);
    expect(pinMet(pin('go', '1.28'), '1.27.4')).toBe(false);
  });
});

describe('runtimeMismatches', () => {
  it('one line per tool, from its first pin, naming the file, both versions and the setting', () => {
    const lines = runtimeMismatches([file('.nvmrc', '18\n'), file('.node-version', '22\n')], NODE_BOX);
    expect(lines).toEqual([
      "the repo asks for node 18 (.nvmrc); the box has node 22.23.5, so what it runs may behave differently (baseImages.node picks the box's image)",
    ]);
    expect(runtimeMismatches([file('go.mod', 'module m\ngo 1.99\n')], { go: '1.27.4' })).toEqual([
      "the repo needs go 1.99 or newer (go.mod); the box has go 1.27.4, so go commands fail there (no toolchain download in the box; baseImages.go picks the box's image)",
    ]);
  });

  it('says nothing when the pin is met or the box lacks the tool', () => {
    expect(runtimeMismatches([file('.nvmrc', 'v22.1.0\n')], NODE_BOX)).toEqual([]);
    expect(runtimeMismatches([file('.python-version', '3.12\n')], NODE_BOX)).toEqual([]);
  });
});
