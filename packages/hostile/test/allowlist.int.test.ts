import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';
import { cli, createBox, destroyBox, destroyLeftovers, execBox, FIXTURES, parseJson } from './_harness.js';

// allowlist needs root (host iptables) and runs under runc only: runsc is registered with
// --network=none here, and create refuses allowlist with runsc.
const isRoot = process.getuid?.() === 0;
const FIXED_V4 = ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '169.254.0.0/16', '100.64.0.0/10'];

interface VerifyReport {
  ok: boolean;
  checks: { check: string; pass: boolean; expected: string; seen: string }[];
}

async function rulesOf(id: string, family: 4 | 6): Promise<string[]> {
  const { stdout } = await execa(family === 4 ? 'iptables' : 'ip6tables', ['-w', '10', '-S']);
  return stdout
    .split('\n')
    .filter((line) => line.includes(`"ca-sandbox:${id}#`) || line.endsWith(`"ca-sandbox:${id}"`));
}

/** The host's IPv4 connected and routed prefixes outside the fixed ranges, read here with `ip`. */
async function hostPrefixesOutsideFixed(): Promise<string[]> {
  const routes = JSON.parse((await execa('ip', ['-j', '-4', 'route', 'show', 'table', 'main'])).stdout) as {
    dst: string;
  }[];
  const inside = (cidr: string, range: string) => {
    const toInt = (ip: string) => ip.split('.').reduce((acc, octet) => acc * 256 + Number(octet), 0);
    const [addr = '', bits = '32'] = cidr.split('/');
    const [base = '', prefix = '32'] = range.split('/');
    if (Number(bits) < Number(prefix)) return false;
    const size = 2 ** (32 - Number(prefix));
    return Math.floor(toInt(addr) / size) === Math.floor(toInt(base) / size);
  };
  return routes
    .map((route) => route.dst)
    .filter((dst) => dst !== 'default')
    .map((dst) => (dst.includes('/') ? dst : `${dst}/32`))
    .filter((dst) => !FIXED_V4.some((range) => inside(dst, range)));
}

afterAll(destroyLeftovers);

describe.skipIf(!isRoot)('allowlist boxes (runc)', () => {
  it('resolve no name: the resolver upstream is the box loopback, and the rules drop the host prefixes', async () => {
    const box = await createBox(join(FIXTURES, 'allowlist-dns'), {
      network: 'allowlist',
      extra: ['--allow', '0.0.0.0/0'],
    });
    const name = `probe-${randomUUID().slice(0, 8)}.test`;
    const probe = await execBox(box.id, ['sh', 'dns-probe.sh', name], ['--timeout', '90']);
    expect(probe.stdout).toContain('resolv: nameserver 127.0.0.11');
    expect(probe.stdout).toContain(`UNRESOLVED ${name}`);
    // Docker's resolver forwarded the lookup to 127.0.0.1 INSIDE the box, where the box itself
    // listened: the query never left it (under 192.0.2.1 it went to this host's gateway).
    expect(probe.stdout).toMatch(new RegExp(`CAUGHT IN BOX .*inside-${name.replace(/\./g, '\\.')}`));

    const verify = await cli(['verify', box.id, '--json']);
    const report = parseJson<VerifyReport>(verify);
    expect(verify.exitCode, verify.stderr).toBe(0);
    expect(report.checks.find((row) => row.check === 'dns-blackhole')).toMatchObject({
      pass: true,
      seen: '127.0.0.1',
    });
    expect(report.checks.find((row) => row.check === 'allowlist-firewall')?.pass).toBe(true);

    // This host's LAN (192.0.2.0/24 here: TEST-NET-1, outside RFC 1918) is dropped, not allowed.
    const prefixes = await hostPrefixesOutsideFixed();
    expect(prefixes.length).toBeGreaterThan(0);
    const rules = await rulesOf(box.id, 4);
    for (const prefix of prefixes)
      expect(rules.some((rule) => rule.includes(`-d ${prefix} `) && rule.endsWith('-j DROP'))).toBe(true);
    await destroyBox(box.id);
    expect(await rulesOf(box.id, 4)).toEqual([]);
  });

  it('a deleted IPv6 rule fails verify even when a stray rule keeps the count; destroy removes every rule', async () => {
    const box = await createBox(join(FIXTURES, 'allowlist-dns'), {
      network: 'allowlist',
      extra: ['--allow', '203.0.113.7', '--allow', '2001:db8::/32'],
    });
    const v6 = await rulesOf(box.id, 6);
    // The catch-all DROPs outlive the ::/1 guards (iptables-nft ignores IPv6 masks on -D).
    const catchAll = v6.filter((rule) =>
      /^-A (FORWARD|INPUT) -i casbx[0-9a-f]+ -m comment --comment "[^"]+" -j DROP$/.test(rule),
    );
    expect(catchAll.map((rule) => rule.split(' ')[1]).sort()).toEqual(['FORWARD', 'INPUT']);
    expect((await cli(['verify', box.id])).exitCode).toBe(0);

    const victim = catchAll.find((rule) => rule.startsWith('-A FORWARD')) ?? '';
    const words = victim.match(/"[^"]*"|\S+/g)?.map((word) => word.replace(/^"|"$/g, '')) ?? [];
    await execa('ip6tables', ['-w', '10', '-D', ...words.slice(1)]);
    const bridge = words[words.indexOf('-i') + 1] ?? '';
    await execa('ip6tables', [
      '-w',
      '10',
      '-I',
      'FORWARD',
      '1',
      '-i',
      bridge,
      '-d',
      '2001:db8:1::/48',
      '-m',
      'comment',
      '--comment',
      `ca-sandbox:${box.id}#z1`,
      '-j',
      'ACCEPT',
    ]);
    expect(await rulesOf(box.id, 6)).toHaveLength(v6.length);
    const verify = await cli(['verify', box.id, '--json']);
    expect(verify.exitCode).toBe(1);
    const row = parseJson<VerifyReport>(verify).checks.find((c) => c.check === 'allowlist-firewall');
    expect(row?.pass).toBe(false);
    expect(row?.seen).toMatch(/missing 1: 6 FORWARD .*-j DROP/);
    expect(row?.seen).toContain('unexpected 1');

    await destroyBox(box.id);
    expect(await rulesOf(box.id, 6)).toEqual([]);
    expect(await rulesOf(box.id, 4)).toEqual([]);
  });
});
