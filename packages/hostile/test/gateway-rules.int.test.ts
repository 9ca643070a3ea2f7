import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { docker } from '@ca-sandbox/docker/cli';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, createBox, destroyBox, destroyLeftovers, execBox, hostAddress, parseJson } from './_harness.js';

/**
 * An allowlist box's gateway must enforce the box's list and nothing else, for as long as the box
 * lives: a gateway restarted (a reboot, `docker restart`) comes back with the box's rules, never
 * with the create's phase rules; a gateway whose configuration was rewritten fails `verify` and
 * `start`'s gate. (Allowlist boxes run under runc only: runsc here has no network.)
 */

let listener: Server;
let allowed = '';
let fixture = '';

/** What the gateway answers the box's CONNECT to `target` (the status code, or an error). */
const CONNECT = `
proxy=\${HTTPS_PROXY#http://}; host=\${proxy%:*}; port=\${proxy##*:}
exec 3<>/dev/tcp/$host/$port || { echo STATUS unreachable; exit 0; }
printf 'CONNECT %s HTTP/1.1\\r\\nHost: %s\\r\\n\\r\\n' "$1" "$1" >&3
read -r -t 10 version status rest <&3
echo "STATUS \${status:-none}"
`;

async function connectStatus(id: string, target: string): Promise<string> {
  const result = await execBox(id, ['bash', '-c', CONNECT, 'connect', target], ['--timeout', '60']);
  expect(result.exitCode, result.stderr).toBe(0);
  return /STATUS (\S+)/.exec(result.stdout)?.[1] ?? result.stdout;
}

interface VerifyJson {
  ok: boolean;
  checks: { check: string; pass: boolean; seen?: string }[];
}

beforeAll(async () => {
  listener = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => listener.listen(0, '0.0.0.0', resolve));
  allowed = `${await hostAddress()}:${(listener.address() as { port: number }).port}`;
  fixture = await mkdtemp(join(tmpdir(), 'ca-hostile-gwrules-'));
  await writeFile(join(fixture, 'README.md'), 'nothing to install\n');
});

afterAll(async () => {
  await destroyLeftovers();
  await new Promise((resolve) => listener?.close(resolve));
  if (fixture) await rm(fixture, { recursive: true, force: true });
});

describe('the gateway of an allowlist box', () => {
  it('comes back with the box rules after a restart, and start and verify check them', async () => {
    const box = await createBox(fixture, { network: 'allowlist', extra: ['--allow', allowed] });
    const gateway = `ca-sbx.gw.${box.id}`;
    expect(await connectStatus(box.id, allowed)).toBe('200');
    // The create's gateway allowed nothing at all while the tree was copied: a restart used to
    // bring that back. Now the box's list is the gateway's own configuration.
    await docker(['restart', '--time', '0', '--', gateway]);
    const started = await cli(['start', box.id, '--json']);
    expect(started.exitCode, started.stdout + started.stderr).toBe(0);
    expect(await connectStatus(box.id, allowed)).toBe('200');
    expect(await connectStatus(box.id, 'example.com:443')).toBe('403');
    const verify = await cli(['verify', box.id, '--json']);
    expect(verify.exitCode, verify.stdout).toBe(0);
    expect(parseJson<VerifyJson>(verify).checks).toContainEqual(
      expect.objectContaining({ check: 'allowlist-gateway-rules', pass: true }),
    );
    await destroyBox(box.id);
  }, 600_000);

  it('fails verify and the start gate when its configuration is not the box list', async () => {
    const box = await createBox(fixture, { network: 'allowlist', extra: ['--allow', allowed] });
    const gateway = `ca-sbx.gw.${box.id}`;
    // Someone with the engine rewrites the gateway's rules to let everything through (as squid's
    // own user: root in the gateway has no capability to write another user's file).
    const tamper = await docker(
      [
        'exec',
        '--user',
        '1000:1000',
        '--',
        gateway,
        '/bin/sh',
        '-c',
        "sed -i -e '/^http_access deny blocked$/d' -e 's/^http_access deny all$/http_access allow all/' /tmp/squid.conf && /usr/sbin/squid -k reconfigure -f /tmp/squid.conf",
      ],
      { allowFailure: true },
    );
    expect(tamper.exitCode, tamper.stderr).toBe(0);
    // The control: the rewritten gateway does try an off-list destination now (this host's port 1,
    // closed: squid's own error, no longer its 403).
    await new Promise((resolve) => setTimeout(resolve, 2000));
    expect(await connectStatus(box.id, `${allowed.split(':')[0]}:1`)).not.toBe('403');
    const verify = await cli(['verify', box.id, '--json']);
    expect(verify.exitCode, verify.stdout).toBe(1);
    const report = parseJson<VerifyJson>(verify);
    expect(report.ok).toBe(false);
    expect(report.checks).toContainEqual(
      expect.objectContaining({ check: 'allowlist-gateway-rules', pass: false }),
    );
    // start re-runs the gate: a failing gate stops the box again.
    const started = await cli(['start', box.id, '--json']);
    expect(started.exitCode, started.stdout).not.toBe(0);
    const state = await docker(['inspect', '--format', '{{.State.Running}}', '--', box.container]);
    expect(state.stdout.trim()).toBe('false');
    // The report keeps the gate as it was at create (passed) and at the refused start (the row).
    const kept = await cli(['report', box.id, '--json']);
    expect(kept.exitCode, kept.stderr).toBe(0);
    const { isolation, changes } = JSON.parse(kept.stdout) as {
      isolation: { history: { phase: string; ok: boolean; checks: { id: string; pass: boolean }[] }[] };
      changes: { state: string; complete: boolean; problems: string[] };
    };
    expect(isolation.history.map((gate) => [gate.phase, gate.ok])).toEqual([
      ['create', true],
      ['start', false],
    ]);
    expect(isolation.history[1]?.checks).toContainEqual({
      ...isolation.history[1]?.checks.find((check) => check.id === 'allowlist-gateway-rules'),
      pass: false,
    });
    // A stopped box's volume is listed (nothing of it runs); its tmpfs went when it stopped, and
    // the report says so rather than "nothing changed there".
    expect(changes).toMatchObject({ state: 'computed', complete: false });
    expect(changes.problems).toContain(
      'the box is stopped: what its processes left in /tmp and /dev/shm went with it (tmpfs); /work/repo was listed',
    );
    const page = await cli(['report', box.id]);
    expect(page.stdout).toMatch(/start \S+ FAILED allowlist-gateway-rules/);
    expect(page.stdout).toMatch(
      /files {6}\d+ added, \d+ modified, \d+ deleted in \/work\/repo since the clone.*\(INCOMPLETE\)/,
    );
    expect(page.stdout).toContain('incomplete: the box is stopped');
    // The lister is gone, the box still stopped.
    const left = await docker([
      'ps',
      '-a',
      '--filter',
      `label=ca.sandbox.id=${box.id}`,
      '--format',
      '{{.Names}} {{.State}}',
    ]);
    expect(left.stdout).not.toContain('helper');
    await destroyBox(box.id);
  }, 600_000);
});
