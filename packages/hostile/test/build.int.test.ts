import { randomUUID } from 'node:crypto';
import { cp, mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  findBuildLeftovers,
  loadExtraCa,
  prepImageTag,
  removeBuildLeftovers,
  resolveCaCertificates,
  staleBuildDirectories,
} from '@ca-sandbox/build';
import { docker } from '@ca-sandbox/docker/cli';
import { execa } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';
import {
  BIN,
  cli,
  createBox,
  destroyBox,
  destroyLeftovers,
  execBox,
  FIXTURES,
  labeledLeft,
  parseJson,
} from './_harness.js';

// The dependency install runs in a container of its own (the engine's default runtime, whatever
// the box's), before any box exists, so these attacks do not depend on the box's runtime.

const scratch: string[] = [];
const images = new Set<string>();

/** The fixture under a unique directory name: the repo name, and so every build label, is this run's. */
async function uniqueRepo(fixture: string): Promise<{ path: string; repo: string }> {
  const repo = `${fixture}-${randomUUID().slice(0, 8)}`;
  const root = await mkdtemp(join(tmpdir(), 'ca-hostile-build-'));
  scratch.push(root);
  const path = join(root, repo);
  await cp(join(FIXTURES, fixture), path, { recursive: true });
  return { path, repo };
}

async function ids(argv: string[]): Promise<string[]> {
  return (await docker(argv)).stdout.split('\n').filter(Boolean);
}

/** Every image (tagged or not) and container a build of `repo` left. */
async function leftBy(repo: string): Promise<string[]> {
  const [cache, steps, containers] = await Promise.all([
    ids(['image', 'ls', '--all', '--quiet', '--filter', `label=ca.sandbox.cache.repo=${repo}`]),
    ids(['image', 'ls', '--all', '--quiet', '--filter', `label=ca.sandbox.build.repo=${repo}`]),
    ids(['container', 'ls', '--all', '--quiet', '--filter', `label=ca.sandbox.build.repo=${repo}`]),
  ]);
  return [...cache, ...steps, ...containers];
}

afterAll(async () => {
  await destroyLeftovers();
  if (images.size) await docker(['image', 'rm', '--force', ...images], { allowFailure: true });
  for (const dir of scratch) await rm(dir, { recursive: true, force: true });
});

describe('hostile dependency installs', () => {
  it('an install that fills the disk fails create at the deps cap, names the cap and leaves no image', async () => {
    const { path, repo } = await uniqueRepo('build-cap');
    const name = `hostile-${randomUUID().slice(0, 8)}`;
    const started = Date.now();
    const result = await cli([
      'create',
      path,
      '--name',
      name,
      '--network',
      'clone-then-cut',
      '--max-deps-size',
      '48m',
    ]);
    console.info(`build-cap: create failed after ${Date.now() - started} ms: ${result.stderr.trim()}`);
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toContain('over the deps image cap of 48 MiB');
    expect(result.stderr).not.toMatch(/\n\s+at /); // one line, no stack
    expect(await leftBy(repo)).toEqual([]);
    expect(
      await ids(['container', 'ls', '--all', '--quiet', '--filter', `label=ca.sandbox.id=${name}`]),
    ).toEqual([]);
    // The env var sets the cap too: a value that is not a size fails the create, naming the variable.
    const bad = await cli(['create', path, '--network', 'clone-then-cut'], {
      CA_SANDBOX_MAX_DEPS_SIZE: 'lots',
    });
    expect(bad.exitCode).not.toBe(0);
    expect(bad.stderr).toContain('CA_SANDBOX_MAX_DEPS_SIZE');
  });

  it('an install that floods its output keeps a bounded log on the host, with its last lines', async () => {
    const { path, repo } = await uniqueRepo('build-log-flood');
    const state = await mkdtemp(join(tmpdir(), 'ca-hostile-state-'));
    scratch.push(state);
    const name = `hostile-${randomUUID().slice(0, 8)}`;
    const result = await cli(['create', path, '--name', name, '--network', 'clone-then-cut'], {
      XDG_STATE_HOME: state,
    });
    expect(result.exitCode, result.stderr).toBe(1);
    const dir = join(state, 'ca-sandbox', 'logs');
    const logs = await readdir(dir);
    expect(logs).toHaveLength(1);
    const file = join(dir, logs[0] ?? '');
    expect(result.stderr).toContain(file);
    // 40 MiB printed; the file keeps 16 MiB, a note and the last 500 lines (1,000 bytes each).
    expect((await stat(file)).size).toBeLessThan(16 * 1024 * 1024 + 501 * 1024);
    const text = await readFile(file, 'utf8');
    expect(text).toContain('[ca-sandbox: the install printed more than this log keeps (16 MiB');
    expect(text.slice(-200_000)).toContain('hostile flood: the last line');
    expect(await leftBy(repo)).toEqual([]);
    expect(
      await ids(['container', 'ls', '--all', '--quiet', '--filter', `label=ca.sandbox.id=${name}`]),
    ).toEqual([]);
  });

  it('setuid helpers of the base image give the install no root (no_new_privs, setuid bits stripped)', async () => {
    const base = `ca-sbx-hostile-suid:${randomUUID().slice(0, 8)}`;
    images.add(base);
    const context = await mkdtemp(join(tmpdir(), 'ca-hostile-suid-'));
    scratch.push(context);
    await docker(['build', '--quiet', '--tag', base, '-'], {
      input:
        'FROM ca-sbx-base:node\nRUN cp /usr/bin/env /usr/local/bin/suid-env && chmod 4755 /usr/local/bin/suid-env\n',
    });
    // The helper really escalates outside our build: the attack is not vacuous.
    const control = await docker([
      'run',
      '--rm',
      '--network',
      'none',
      '--user',
      '1000:1000',
      base,
      'suid-env',
      'id',
      '-u',
    ]);
    expect(control.stdout.trim()).toBe('0');
    // The deps build starts from this base's prep image (its setuid strip): built here, removed after.
    const baseId = (await docker(['image', 'inspect', '--format', '{{.Id}}', base])).stdout.trim();
    const ca = resolveCaCertificates();
    images.add(prepImageTag(baseId, ca ? loadExtraCa(ca).hash : undefined));

    const { path, repo } = await uniqueRepo('build-suid');
    const box = await createBox(path, { network: 'clone-then-cut', extra: ['--base-image', base] });
    for (const image of await ids([
      'image',
      'ls',
      '--quiet',
      '--filter',
      `label=ca.sandbox.cache.repo=${repo}`,
    ]))
      images.add(image);
    const seen = (await execBox(box.id, ['cat', '/deps/src/escalation.txt'])).stdout;
    console.info(`build-suid: ${seen.replace(/\n/g, ' | ')}`);
    expect(seen).toMatch(/^NoNewPrivs:\s+1$/m);
    expect(seen).toContain('mode /usr/local/bin/suid-env 755');
    expect(seen).toContain('suid-env euid=1000');
    expect(seen).not.toMatch(/euid=0|uid=0\(root\)/);
    expect(seen).toMatch(/done\n$/);
    await destroyBox(box.id);
  });

  it("a killed build's leftovers are listed by prune --images --dry-run and removed by a scoped removal", async () => {
    const { path, repo } = await uniqueRepo('build-killed');
    const name = `hostile-${randomUUID().slice(0, 8)}`;
    // Its own process group, so the kill takes the CLI and its docker client, as a closed terminal would.
    const child = execa(
      process.execPath,
      [BIN, 'create', path, '--name', name, '--network', 'clone-then-cut'],
      {
        detached: true,
        reject: false,
        stdin: 'ignore',
        env: { NO_COLOR: '1' },
      },
    );
    const pid = child.pid as number;
    const deadline = Date.now() + 180_000;
    while (
      (await ids(['container', 'ls', '--quiet', '--filter', `label=ca.sandbox.build.repo=${repo}`]))
        .length === 0
    ) {
      expect(Date.now() < deadline, 'the install step never started').toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    // While the build runs, what it made (its running install container; dangling, labeled images
    // if a pre-install build ran: only with Claude Code) is its work, not leftovers: neither the
    // library listing nor an unscoped `prune --images` (dry run) takes it.
    const steps = await ids([
      'image',
      'ls',
      '--quiet',
      '--no-trunc',
      '--filter',
      'dangling=true',
      '--filter',
      `label=ca.sandbox.build.repo=${repo}`,
    ]);
    expect(await findBuildLeftovers({ repo })).toMatchObject({ images: [], containers: [] });
    const whileRunning = await cli(['prune', '--images', '--dry-run', '--json']);
    expect(whileRunning.exitCode, whileRunning.stderr).toBe(0);
    const busy = parseJson<{ removed: string[] }>(whileRunning).removed;
    for (const step of steps) expect(busy).not.toContain(`image:${step}`);
    expect(busy.filter((entry) => entry.includes(`ca-sbx-build-${pid}-`))).toEqual([]);
    // The install runs through the sandbox's egress gateway: its container and both networks exist.
    const during = await labeledLeft(name);
    expect(during).toEqual(
      expect.arrayContaining([
        `container:ca-sbx.gw.${name}`,
        `network:ca-sbx.egress.${name}`,
        `network:ca-sbx.out.${name}`,
      ]),
    );
    // The helper went when the dephash was known (its last use): the build runs without it.
    expect(during).not.toContain(`container:ca-sbx_helper-${name}`);
    process.kill(-pid, 'SIGKILL');
    await child;
    // The daemon cancels the orphaned build; what it leaves is what we look for.
    const settle = Date.now() + 30_000;
    while (
      (await ids(['container', 'ls', '--quiet', '--filter', `label=ca.sandbox.build.repo=${repo}`])).length >
        0 &&
      Date.now() < settle
    )
      await new Promise((resolve) => setTimeout(resolve, 500));

    const mine = await findBuildLeftovers({ repo });
    const dirs = await staleBuildDirectories({ pids: [pid] });
    console.info(
      `build-killed: ${mine.images.length} untagged step(s), ${mine.containers.length} stopped container(s), ${dirs.length} directory(ies) left`,
    );
    // Its install container, stopped when the create's end closed the stdin its PID 1 reads.
    expect(mine.containers.length).toBeGreaterThan(0);
    expect(dirs).toHaveLength(1);
    expect(dirs[0]).toMatch(new RegExp(`/ca-sbx-build-${pid}-[A-Za-z0-9]{6}$`));

    // The unscoped dry run (it touches nothing) finds all of them.
    const dry = await cli(['prune', '--images', '--dry-run', '--json']);
    expect(dry.exitCode, dry.stderr).toBe(0);
    const listed = parseJson<{ removed: string[] }>(dry).removed;
    for (const image of mine.images) expect(listed).toContain(`image:${image}`);
    for (const container of mine.containers) expect(listed).toContain(`container:${container}`);
    expect(listed).toContain(`directory:${dirs[0]}`);
    // The gateway outlives a killed create (stopped by its heartbeat within 90 s, removed only by
    // prune or destroy): prune finds it and its networks.
    for (const gateway of [
      `container:ca-sbx.gw.${name}`,
      `network:ca-sbx.egress.${name}`,
      `network:ca-sbx.out.${name}`,
    ])
      expect(listed).toContain(gateway);

    // Removal scoped to what this test provably made: its repo's labels, its pid, its sandbox name.
    const removal = await removeBuildLeftovers({ ...mine, directories: dirs });
    expect(removal.failures).toEqual([]);
    expect((await cli(['destroy', name, '--json'])).exitCode).toBe(0);
    expect(await leftBy(repo)).toEqual([]);
    expect(await readdir(tmpdir())).not.toContain(dirs[0]?.split('/').at(-1));
    // Nothing of the sandbox or its gateway: no container, volume or network, and no host rule.
    expect(await labeledLeft(name)).toEqual([]);
    expect((await execa('iptables', ['-w', '10', '-S'], { reject: false })).stdout).not.toContain(
      `ca-sandbox:${name}`,
    );
  });
});
