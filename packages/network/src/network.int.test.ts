import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { labelArgs, sandboxLabels } from '@ca-sandbox/docker';
import { docker } from '@ca-sandbox/docker/cli';
import { execa } from 'execa';
import { GenericContainer, type StartedTestContainer, Wait } from 'testcontainers';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { SandboxNetworkMismatchError } from './errors.js';
import { applyAllowlist, listFirewallRules, removeFirewallRules, verifyFirewallRules } from './firewall.js';
import { firewallBlockedRanges } from './host-ranges.js';
import { assertFirewallUsable, firewallFamilies } from './iptables.js';
import { bridgeName } from './names.js';
import {
  createSandboxNetwork,
  listSandboxNetworks,
  removeSandboxNetworks,
  type SandboxNetwork,
} from './sandbox-network.js';

const IMAGE = 'ca-sbx-base:python';
const isRoot = process.getuid?.() === 0;
const imagePresent = (await docker(['image', 'inspect', IMAGE], { allowFailure: true })).exitCode === 0;

/**
 * Runs inside a container: tries a TCP connect (1.5 s timeout) to each host:port and reports
 * `open:<first response line>`, `timeout` (dropped), `refused` or `error:<errno>`.
 */
const PROBE = `
import json, socket, sys
out = {}
for target in json.loads(sys.argv[1]):
    host, port = target.rsplit(':', 1)
    s = socket.socket()
    s.settimeout(1.5)
    try:
        s.connect((host, int(port)))
        s.sendall(b'GET / HTTP/1.0\\r\\nHost: probe\\r\\n\\r\\n')
        out[target] = 'open:' + s.recv(64).split(b'\\r\\n')[0].decode(errors='replace')
    except socket.timeout:
        out[target] = 'timeout'
    except ConnectionRefusedError:
        out[target] = 'refused'
    except OSError as e:
        out[target] = 'error:' + str(e.errno)
    finally:
        s.close()
print(json.dumps(out))
`;

const ids = new Set<string>();
const containers = new Set<string>();

function uniqueId(): string {
  const id = `sbx-${randomUUID().slice(0, 8)}`;
  ids.add(id);
  return id;
}

/** The box as run will start it: unprivileged, no capabilities, on the sandbox network. */
async function startBox(id: string, network: string): Promise<string> {
  const name = `ca-sbx-${id}`;
  containers.add(name);
  await docker([
    'run',
    '-d',
    '--name',
    name,
    ...labelArgs(sandboxLabels(id, { 'ca.sandbox.role': 'box' })),
    '--network',
    network,
    '--user',
    '1000:1000',
    '--cap-drop',
    'ALL',
    '--security-opt',
    'no-new-privileges',
    '--read-only',
    '--',
    IMAGE,
    'sleep',
    'infinity',
  ]);
  return name;
}

async function probeFrom(container: string, targets: string[]): Promise<Record<string, string>> {
  const { stdout } = await docker(['exec', container, 'python3', '-c', PROBE, JSON.stringify(targets)], {
    timeoutMs: 60_000,
  });
  return JSON.parse(stdout) as Record<string, string>;
}

/** The same probe from a throwaway container on Docker's default bridge (no rules of ours). */
async function probeFromDefaultBridge(targets: string[]): Promise<Record<string, string>> {
  const id = uniqueId();
  const { stdout } = await docker(
    [
      'run',
      '--rm',
      ...labelArgs(sandboxLabels(id)),
      '--network',
      'bridge',
      '--user',
      '1000:1000',
      '--cap-drop',
      'ALL',
    ].concat(['--', IMAGE, 'python3', '-c', PROBE, JSON.stringify(targets)]),
    { timeoutMs: 60_000 },
  );
  return JSON.parse(stdout) as Record<string, string>;
}

async function rawRules(): Promise<string> {
  const out: string[] = [];
  for (const family of firewallFamilies()) {
    out.push((await execa(family === 4 ? 'iptables' : 'ip6tables', ['-w', '10', '-S'])).stdout);
  }
  return out.join('\n');
}

async function cleanup(id: string): Promise<void> {
  for (const name of containers) {
    if (name === `ca-sbx-${id}`) {
      await docker(['rm', '-f', name], { allowFailure: true });
      containers.delete(name);
    }
  }
  await removeSandboxNetworks(id);
  await removeFirewallRules(id);
}

afterEach(async () => {
  for (const id of ids) await cleanup(id);
  ids.clear();
});

describe.skipIf(!imagePresent)('offline policy', () => {
  it('a box with --network none has only the loopback interface', async () => {
    const id = uniqueId();
    const { stdout } = await docker([
      'run',
      '--rm',
      ...labelArgs(sandboxLabels(id)),
      '--network',
      'none',
      '--user',
      '1000:1000',
      '--cap-drop',
      'ALL',
      '--',
      IMAGE,
      'ls',
      '/sys/class/net',
    ]);
    expect(stdout.trim().split(/\s+/)).toEqual(['lo']);
  });
});

describe.skipIf(!imagePresent)('createSandboxNetwork', () => {
  it('creates a labeled bridge network with the derived bridge interface, removed by label', async () => {
    const id = uniqueId();
    const net = await createSandboxNetwork(id, {
      'ca.sandbox.policy': 'allowlist',
      'ca.sandbox.id': 'spoofed',
    });
    expect(net.name).toBe(`ca-sbx-${id}`);
    expect(net.bridge).toBe(bridgeName(id));
    expect(net.subnet).toMatch(/^\d+\.\d+\.\d+\.\d+\/\d+$/);
    expect(net.gateway).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    const { stdout } = await docker(['network', 'inspect', '--format', '{{json .}}', net.name]);
    const inspect = JSON.parse(stdout);
    expect(inspect.Driver).toBe('bridge');
    expect(inspect.Labels).toEqual({
      'ca.sandbox': '1',
      'ca.sandbox.id': id,
      'ca.sandbox.policy': 'allowlist',
    });
    expect(inspect.Options['com.docker.network.bridge.name']).toBe(net.bridge);
    expect(existsSync(`/sys/class/net/${net.bridge}`)).toBe(true);
    expect(await listSandboxNetworks(id)).toEqual([net.name]);

    expect(await removeSandboxNetworks(id)).toEqual({ removed: [net.name], failures: [] });
    expect(await listSandboxNetworks(id)).toEqual([]);
    expect(existsSync(`/sys/class/net/${net.bridge}`)).toBe(false);
  });

  it('a box on it has no IPv6 at all (so only the IPv4 rules carry traffic)', async () => {
    const id = uniqueId();
    const net = await createSandboxNetwork(id);
    const box = await startBox(id, net.name);
    const { stdout } = await docker(['exec', box, 'sh', '-c', 'cat /proc/net/if_inet6; ls /sys/class/net']);
    expect(stdout.trim().split(/\s+/).sort()).toEqual(['eth0', 'lo']);
  });
});

describe.skipIf(!imagePresent || !isRoot)('allowlist firewall on the real engine', () => {
  const peers: StartedTestContainer[] = [];
  let allowedPeer = '';
  let otherPeer = '';
  let hostServer: Server;
  let hostPort = 0;

  beforeAll(async () => {
    await assertFirewallUsable();
    for (let i = 0; i < 2; i += 1) {
      peers.push(
        await new GenericContainer(IMAGE)
          .withCommand(['python3', '-u', '-m', 'http.server', '8080'])
          .withWaitStrategy(Wait.forLogMessage(/Serving HTTP/))
          .start(),
      );
    }
    allowedPeer = peers[0]?.getIpAddress('bridge') ?? '';
    otherPeer = peers[1]?.getIpAddress('bridge') ?? '';
    // A listener on the host itself: what a box must not reach through its gateway.
    hostServer = createServer((_req, res) => res.end('host'));
    await new Promise<void>((resolve) => hostServer.listen(0, '0.0.0.0', resolve));
    hostPort = (hostServer.address() as AddressInfo).port;
  });

  afterAll(async () => {
    await Promise.all(peers.map((peer) => peer.stop()));
    await new Promise((resolve) => hostServer?.close(resolve));
  });

  it('the peers and the host answer a container without our rules (the control)', async () => {
    const seen = await probeFromDefaultBridge([
      `${allowedPeer}:8080`,
      `${otherPeer}:8080`,
      `172.17.0.1:${hostPort}`,
    ]);
    expect(seen[`${allowedPeer}:8080`]).toMatch(/^open:HTTP\/1\.0 200/);
    expect(seen[`${otherPeer}:8080`]).toMatch(/^open:HTTP\/1\.0 200/);
    expect(seen[`172.17.0.1:${hostPort}`]).toMatch(/^open:HTTP\/1\.1 200/);
  });

  it('only the allowed peer answers; the other peer and the host do not; link-local is dropped by rule', async () => {
    const id = uniqueId();
    const net = await createSandboxNetwork(id);
    const box = await startBox(id, net.name);
    // Before the rules the box reaches its gateway (the host): the drop below is ours.
    const before = await probeFrom(box, [`${net.gateway}:${hostPort}`]);
    expect(before[`${net.gateway}:${hostPort}`]).toMatch(/^open:HTTP\/1\.1 200/);

    await applyAllowlist(id, net, [allowedPeer]);
    const seen = await probeFrom(box, [
      `${allowedPeer}:8080`,
      `${otherPeer}:8080`,
      `${net.gateway}:${hostPort}`,
      `172.17.0.1:${hostPort}`,
    ]);
    expect(seen).toEqual({
      [`${allowedPeer}:8080`]: 'open:HTTP/1.0 200 OK',
      [`${otherPeer}:8080`]: 'timeout',
      [`${net.gateway}:${hostPort}`]: 'timeout',
      [`172.17.0.1:${hostPort}`]: 'timeout',
    });

    const mine = (await listFirewallRules()).filter((rule) => rule.sandboxId === id);
    // Link-local (the cloud metadata address among it) is checked by the installed rules, not by
    // sending it traffic: tests never probe link-local. The box's forward chain drops 169.254/16,
    // and only the one named peer is accepted before that drop.
    const forward = mine.filter((rule) => rule.family === 4 && rule.chain === 'DOCKER-USER');
    const linkLocalDrop = forward.findIndex((rule) => / -d 169\.254\.0\.0\/16 .*-j DROP$/.test(rule.rule));
    expect(linkLocalDrop).toBeGreaterThan(0);
    const acceptedBefore = forward
      .slice(0, linkLocalDrop)
      .filter((rule) => rule.rule.endsWith('-j ACCEPT') && !rule.rule.includes('ESTABLISHED'));
    expect(acceptedBefore.map((rule) => rule.rule.match(/ -d (\S+)/)?.[1])).toEqual([`${allowedPeer}/32`]);
    const exact = await verifyFirewallRules(id, [`${allowedPeer}/32`]);
    expect(exact).toMatchObject({ ok: true, seen: mine.length, expected: mine.length });
    expect(new Set(mine.map((rule) => rule.chain))).toEqual(
      new Set(
        firewallFamilies().length === 2 ? ['DOCKER-USER', 'INPUT', 'FORWARD'] : ['DOCKER-USER', 'INPUT'],
      ),
    );

    // Teardown (the lifecycle's order): box first, then the network, then the rules.
    await docker(['rm', '-f', box]);
    expect(await removeSandboxNetworks(id)).toEqual({ removed: [net.name], failures: [] });
    expect(await removeFirewallRules(id)).toHaveLength(mine.length);
    expect(await rawRules()).not.toContain(`ca-sandbox:${id}`);
    expect(await listSandboxNetworks(id)).toEqual([]);
  });

  it('0.0.0.0/0 does not open the LAN or the host; a LAN peer opens only when named', async () => {
    const id = uniqueId();
    const net = await createSandboxNetwork(id);
    await applyAllowlist(id, net, ['0.0.0.0/0', allowedPeer]);
    const box = await startBox(id, net.name);
    const seen = await probeFrom(box, [
      `${allowedPeer}:8080`,
      `${otherPeer}:8080`,
      `${net.gateway}:${hostPort}`,
    ]);
    expect(seen).toEqual({
      [`${allowedPeer}:8080`]: 'open:HTTP/1.0 200 OK',
      [`${otherPeer}:8080`]: 'timeout',
      [`${net.gateway}:${hostPort}`]: 'timeout',
    });
  });

  it('removing the rules while the box runs opens the host again (the drop was ours)', async () => {
    const id = uniqueId();
    const net = await createSandboxNetwork(id);
    await applyAllowlist(id, net, []);
    const box = await startBox(id, net.name);
    expect((await probeFrom(box, [`${net.gateway}:${hostPort}`]))[`${net.gateway}:${hostPort}`]).toBe(
      'timeout',
    );
    const removed = await removeFirewallRules(id);
    expect(removed.length).toBeGreaterThan(0);
    expect(removed.every((line) => /^ip6?tables -A /.test(line) && line.includes(`ca-sandbox:${id}`))).toBe(
      true,
    );
    expect((await probeFrom(box, [`${net.gateway}:${hostPort}`]))[`${net.gateway}:${hostPort}`]).toMatch(
      /^open:/,
    );
  });

  it('re-applying replaces the rules; no guard or stale rule is left', async () => {
    const id = uniqueId();
    const net = await createSandboxNetwork(id);
    const box = await startBox(id, net.name);
    await applyAllowlist(id, net, [otherPeer]);
    await applyAllowlist(id, net, [allowedPeer]);
    const mine = (await listFirewallRules()).filter((rule) => rule.sandboxId === id).map((rule) => rule.rule);
    expect((await verifyFirewallRules(id, [`${allowedPeer}/32`])).ok).toBe(true);
    expect(mine.join('\n')).not.toContain(otherPeer);
    expect(mine.join('\n')).not.toMatch(/0\.0\.0\.0\/1|128\.0\.0\.0\/1/);
    const seen = await probeFrom(box, [`${allowedPeer}:8080`, `${otherPeer}:8080`]);
    expect(seen).toEqual({
      [`${allowedPeer}:8080`]: 'open:HTTP/1.0 200 OK',
      [`${otherPeer}:8080`]: 'timeout',
    });
  });

  it('removeFirewallRules(id) removes exactly that sandbox`s rules', async () => {
    const first = uniqueId();
    const second = uniqueId();
    const netA = await createSandboxNetwork(first);
    const netB = await createSandboxNetwork(second);
    await applyAllowlist(first, netA, [allowedPeer]);
    await applyAllowlist(second, netB, ['203.0.113.0/24']);
    const before = await listFirewallRules();
    const countB = before.filter((rule) => rule.sandboxId === second).length;
    const removed = await removeFirewallRules(first);
    expect(removed).toHaveLength(before.filter((rule) => rule.sandboxId === first).length);
    const after = await listFirewallRules();
    expect(after.filter((rule) => rule.sandboxId === first)).toEqual([]);
    expect(after.filter((rule) => rule.sandboxId === second)).toHaveLength(countB);
    expect(await rawRules()).not.toContain(`ca-sandbox:${first}"`);
  });

  it.skipIf(!firewallFamilies().includes(6))(
    'IPv6: the catch-all DROPs survive the guards; verify sees a deleted rule even when a stray one keeps the count',
    async () => {
      const id = uniqueId();
      const net = await createSandboxNetwork(id);
      const applied = await applyAllowlist(id, net, [allowedPeer, '2001:db8::/32']);
      const v6 = (await execa('ip6tables', ['-w', '10', '-S'])).stdout
        .split('\n')
        .filter((line) => line.includes(`"ca-sandbox:${id}#`));
      // iptables-nft ignores IPv6 masks on -D: deleting the ::/1 guard by a shared comment took
      // this rule. Each rule has its own comment now, so the catch-alls stay.
      const catchAll = (chain: string) =>
        v6.filter(
          (line) => line.startsWith(`-A ${chain} -i ${net.bridge} -m comment`) && line.endsWith('-j DROP'),
        );
      expect(catchAll('FORWARD')).toHaveLength(1);
      expect(catchAll('INPUT')).toHaveLength(1);
      expect(v6.join('\n')).not.toMatch(/-d (::|8000::)\/1 /);
      expect((await verifyFirewallRules(id, applied.allowed, applied.blocked)).ok).toBe(true);

      // Delete the FORWARD catch-all and put a stray ACCEPT in its place: the count stays, verify fails.
      const victim = must(catchAll('FORWARD')[0]);
      await execa('ip6tables', ['-w', '10', '-D', ...splitRule(victim).slice(1)]);
      await execa('ip6tables', [
        '-w',
        '10',
        '-I',
        'FORWARD',
        '1',
        '-i',
        net.bridge,
        '-d',
        '2001:db8:1::/48',
        '-m',
        'comment',
        '--comment',
        `ca-sandbox:${id}#z1`,
        '-j',
        'ACCEPT',
      ]);
      const broken = await verifyFirewallRules(id, applied.allowed, applied.blocked);
      expect(broken.seen).toBe(broken.expected);
      expect(broken.ok).toBe(false);
      expect(broken.missing).toEqual([
        expect.stringMatching(/^6 FORWARD -i casbx[0-9a-f]+ -j DROP -m comment/),
      ]);
      expect(broken.unexpected).toEqual([expect.stringContaining('-d 2001:db8:1::/48')]);
      // Removal takes every rule of the id, the stray one included, and nothing else.
      await removeFirewallRules(id);
      expect(await rawRules()).not.toContain(`ca-sandbox:${id}`);
    },
  );

  it('a LAN outside RFC 1918 (a local docker network on 198.18.x.0/24) is derived from the host and dropped under 0.0.0.0/0', async () => {
    const subnet = `198.18.${Math.floor(Math.random() * 250) + 1}`;
    const lan = `ca-sbx-lan-${randomUUID().slice(0, 8)}`;
    const id = uniqueId();
    await docker(['network', 'create', '--subnet', `${subnet}.0/24`, ...labelArgs(sandboxLabels(id)), lan]);
    const peer = `ca-sbx-${id}-lanpeer`;
    containers.add(peer);
    try {
      await docker([
        'run',
        '-d',
        '--name',
        peer,
        ...labelArgs(sandboxLabels(id)),
        '--network',
        lan,
        '--ip',
        `${subnet}.10`,
        IMAGE,
        'python3',
        '-u',
        '-m',
        'http.server',
        '8080',
      ]);
      const target = `${subnet}.10:8080`;
      // The host reaches it: a local listener, on a prefix none of the fixed ranges covers.
      const blocked = await firewallBlockedRanges();
      expect(blocked[4]).toContain(`${subnet}.0/24`);

      const net = await createSandboxNetwork(id);
      const applied = await applyAllowlist(id, net, ['0.0.0.0/0']);
      expect(applied.blocked).toContain(`${subnet}.0/24`);
      const rules = (await listFirewallRules())
        .filter((rule) => rule.sandboxId === id)
        .map((rule) => rule.rule);
      expect(rules.some((rule) => rule.includes(`-d ${subnet}.0/24`) && rule.endsWith('-j DROP'))).toBe(true);
      const box = await startBox(id, net.name);
      expect((await probeFrom(box, [target]))[target]).toBe('timeout');
      // Naming the peer opens it: the path exists, and the drop above was the derived range's.
      await applyAllowlist(id, net, ['0.0.0.0/0', `${subnet}.10`]);
      const seen = (await probeFrom(box, [target]))[target] ?? '';
      expect(seen).toMatch(/^open:HTTP\/1\.0 200/);
    } finally {
      await docker(['rm', '-f', peer], { allowFailure: true });
      containers.delete(peer);
      await removeSandboxNetworks(id);
      await docker(['network', 'rm', lan], { allowFailure: true });
    }
  });

  it('refuses to firewall a network that is not the sandbox`s own', async () => {
    const id = uniqueId();
    const other = uniqueId();
    const net = await createSandboxNetwork(id);
    const foreign: SandboxNetwork = { ...net, bridge: bridgeName(other) };
    await expect(applyAllowlist(id, foreign, [allowedPeer])).rejects.toBeInstanceOf(
      SandboxNetworkMismatchError,
    );
    await expect(applyAllowlist(other, net, [allowedPeer])).rejects.toBeInstanceOf(
      SandboxNetworkMismatchError,
    );
    // A network with the right name but made by someone else (no labels) is refused too.
    const impostor = uniqueId();
    await docker([
      'network',
      'create',
      '--opt',
      `com.docker.network.bridge.name=${bridgeName(impostor)}`,
      `ca-sbx-${impostor}`,
    ]);
    try {
      const fake: SandboxNetwork = { ...net, name: `ca-sbx-${impostor}`, bridge: bridgeName(impostor) };
      await expect(applyAllowlist(impostor, fake, [])).rejects.toThrow(/is not labeled for sandbox/);
    } finally {
      await docker(['network', 'rm', `ca-sbx-${impostor}`], { allowFailure: true });
    }
    expect(
      (await listFirewallRules()).filter((rule) => [id, other, impostor].includes(rule.sandboxId)),
    ).toEqual([]);
  });
});

function must<T>(value: T | undefined): T {
  if (value === undefined) throw new Error('missing value');
  return value;
}

/** `-A CHAIN ... --comment "x" ...` → argv words (the comment unquoted). */
function splitRule(line: string): string[] {
  return line.match(/"[^"]*"|\S+/g)?.map((word) => word.replace(/^"|"$/g, '')) ?? [];
}
