import { describe, expect, it } from 'vitest';
import { committingLine, skippedScriptsLabel } from './build-image.js';
import { parseSkippedScripts } from './install-scripts.js';

describe('committingLine', () => {
  it('says what the build waits for after the install, with the layer size once a look saw it', () => {
    expect(committingLine(700 * 1024 * 1024)).toBe(
      "the install is done (700 MiB written): cleaning up, then docker saves it as the deps image's layer (later creates of this checkout start from it)",
    );
    expect(committingLine(0)).toMatch(/^the install is done: cleaning up, then docker saves it/);
  });
});

describe('skippedScriptsLabel', () => {
  it('keeps whole entries within the label size, so a cache hit names what the cold create named', () => {
    const entries = Array.from({ length: 300 }, (_, i) => `packages/p${i}/package.json (prepare)`);
    const label = skippedScriptsLabel(entries);
    expect(label.length).toBeLessThanOrEqual(4096);
    const parsed = parseSkippedScripts(label);
    expect(parsed).toEqual(entries.slice(0, parsed.length));
    expect(parsed.length).toBeGreaterThan(100);
  });

  it('printable ASCII only, and never the separator inside an entry', () => {
    expect(
      parseSkippedScripts(skippedScriptsLabel(['a; b/package.json (prepare)', 'é/package.json (install)'])),
    ).toEqual(['a? b/package.json (prepare)', '?/package.json (install)']);
    expect(skippedScriptsLabel([])).toBe('');
  });
});
