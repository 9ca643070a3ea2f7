import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runBin } from './_bin.js';

const BUILT = existsSync(fileURLToPath(new URL('../dist/bundle/main.js', import.meta.url)));

// --verbose prints the stack of a failure. From the minified bundle it read `i: invalid source …
// at ke (…/dist/bundle/chunk-WI4ULRRK.js:2:5553)` (new-user trial): now the error's code heads it
// and the frames name our source files (the bin enables the bundle's source maps under --verbose).
describe.skipIf(!BUILT)('--verbose stacks (bin)', () => {
  it('are headed by the error code and name the source files', async () => {
    const result = await runBin(['create', '/nonexistent/ca-sbx-dir', '--verbose']);
    expect(result.code).toBe(2);
    const lines = result.stderr.split('\n');
    expect(lines[0]).toBe("error: invalid source: '/nonexistent/ca-sbx-dir' is not an existing directory");
    expect(lines[1]).toBe(
      "INVALID_SOURCE: invalid source: '/nonexistent/ca-sbx-dir' is not an existing directory",
    );
    expect(lines[2]).toMatch(/^ {4}at .*packages\/lifecycle\/src\/source\.ts:\d+:\d+\)$/);
  });

  it('stay out of the output without --verbose', async () => {
    const result = await runBin(['create', '/nonexistent/ca-sbx-dir']);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      "error: invalid source: '/nonexistent/ca-sbx-dir' is not an existing directory\n",
    );
  });
});
