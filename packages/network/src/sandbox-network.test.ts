import { describe, expect, it } from 'vitest';
import { InvalidAllowEntryError, InvalidNetworkLabelsError, InvalidSandboxIdError } from './errors.js';
import { applyAllowlist, removeFirewallRules } from './firewall.js';
import { bridgeName } from './names.js';
import { createSandboxNetwork, removeSandboxNetworks } from './sandbox-network.js';

// Bad input is refused before docker or iptables is ever spawned.
describe('input validation at the edge', () => {
  const net = {
    name: 'ca-sbx-sbx-1',
    bridge: bridgeName('sbx-1'),
    subnet: '172.30.0.0/16',
    gateway: '172.30.0.1',
  };

  it('refuses bad sandbox ids', async () => {
    await expect(createSandboxNetwork('Bad Id')).rejects.toBeInstanceOf(InvalidSandboxIdError);
    await expect(removeSandboxNetworks('../x')).rejects.toBeInstanceOf(InvalidSandboxIdError);
    await expect(removeFirewallRules('x y')).rejects.toBeInstanceOf(InvalidSandboxIdError);
    await expect(applyAllowlist('-j', net, [])).rejects.toBeInstanceOf(InvalidSandboxIdError);
  });

  it('refuses labels that are not plain key=value strings', async () => {
    await expect(createSandboxNetwork('sbx-1', { 'bad key': 'v' })).rejects.toBeInstanceOf(
      InvalidNetworkLabelsError,
    );
    await expect(createSandboxNetwork('sbx-1', { ok: 42 as unknown as string })).rejects.toThrow(
      /^invalid network labels/,
    );
  });

  it('refuses allow entries before touching the firewall', async () => {
    await expect(applyAllowlist('sbx-1', net, ['example.com'])).rejects.toBeInstanceOf(
      InvalidAllowEntryError,
    );
  });
});
