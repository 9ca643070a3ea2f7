import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { FirewallUnavailableError } from './errors.js';
import { assertFirewallUsable, findExecutable } from './iptables.js';

describe('findExecutable', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('finds an executable on the search path and ignores a non-executable one', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ca-net-'));
    dirs.push(dir);
    writeFileSync(join(dir, 'fake-tool'), '#!/bin/sh\n');
    expect(findExecutable('fake-tool', dir)).toBeUndefined();
    chmodSync(join(dir, 'fake-tool'), 0o755);
    expect(findExecutable('fake-tool', dir)).toBe(join(dir, 'fake-tool'));
    expect(findExecutable('no-such-tool-here', dir)).toBeUndefined();
  });
});

describe('assertFirewallUsable', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it.skipIf(process.platform !== 'linux')(
    'refuses a non-root user with a prerequisite error and a hint',
    async () => {
      vi.spyOn(process, 'getuid').mockReturnValue(1000);
      const error = await assertFirewallUsable().catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(FirewallUnavailableError);
      expect(error).toMatchObject({ kind: 'prerequisite', code: 'FIREWALL_UNAVAILABLE' });
      expect((error as FirewallUnavailableError).message).toMatch(
        /^the allowlist firewall is not usable: .*needs root/,
      );
      expect((error as FirewallUnavailableError).hint).toMatch(/root/);
    },
  );
});
