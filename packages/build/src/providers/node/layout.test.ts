import { describe, expect, it } from 'vitest';
import { SHIM_REWRITE_JS } from './layout.js';

// The install runs this JS in the build; here it runs on a shim's text as pnpm 11 writes it.
const movedShim = new Function(`${SHIM_REWRITE_JS}; return movedShim;`)() as (
  text: string,
  src: string,
  repo: string,
) => string;

const SHIM = `#!/bin/sh
basedir=$(dirname "$(echo "$0" | sed -e 's,\\\\,/,g')")
if [ -z "$NODE_PATH" ]; then
  export NODE_PATH="/deps/src/node_modules/.pnpm/vitest@3.2.4/node_modules/vitest/node_modules:/deps/src/node_modules:/deps/node_modules:/node_modules:/deps/src/node_modules/.pnpm/node_modules"
else
  export NODE_PATH="/deps/src/node_modules/.pnpm/node_modules:$NODE_PATH"
fi
exec node  "$basedir/../vitest/vitest.mjs" "$@"
# cmd-shim-target=/deps/src/node_modules/vitest/vitest.mjs
`;

describe('the pnpm bin shim rewrite (SHIM_REWRITE_JS)', () => {
  it('moves every NODE_PATH element and the cmd-shim-target under /deps/src to /work/repo, nothing else', () => {
    const moved = movedShim(SHIM, '/deps/src', '/work/repo');
    expect(moved).not.toContain('/deps/src');
    expect(moved).toContain(
      'export NODE_PATH="/work/repo/node_modules/.pnpm/vitest@3.2.4/node_modules/vitest/node_modules:/work/repo/node_modules:/deps/node_modules:/node_modules:/work/repo/node_modules/.pnpm/node_modules"',
    );
    expect(moved).toContain('export NODE_PATH="/work/repo/node_modules/.pnpm/node_modules:$NODE_PATH"');
    expect(moved).toContain('# cmd-shim-target=/work/repo/node_modules/vitest/vitest.mjs');
    // The relative exec line and everything else stay as pnpm wrote them.
    expect(moved.replaceAll('/work/repo', '/deps/src')).toBe(SHIM);
  });

  it('leaves a path that merely contains /deps/src, and other lines that name it, alone', () => {
    const text = '#!/bin/sh\nexport NODE_PATH="/x/deps/src/a:/deps/srcx/b"\necho /deps/src/c\n';
    expect(movedShim(text, '/deps/src', '/work/repo')).toBe(text);
  });
});
