import { describe, expect, it } from 'vitest';
import { buildShellArgs } from './shell.js';

describe('buildShellArgs', () => {
  it('the box user at /work/repo, a TTY only when asked, bash else sh', () => {
    const args = buildShellArgs('ca-sbx-a', true);
    expect(args.slice(0, 8)).toEqual(['exec', '-i', '-t', '-u', '1000:1000', '-w', '/work/repo', 'ca-sbx-a']);
    expect(args.at(-1)).toMatch(/command -v bash.*exec bash.*exec sh/);
    expect(buildShellArgs('ca-sbx-a', false)).not.toContain('-t');
    for (const tty of [true, false]) {
      const options = buildShellArgs('ca-sbx-a', tty);
      expect(options).not.toContain('--privileged');
      expect(options).not.toContain('0');
      expect(options).not.toContain('root');
    }
  });
});
