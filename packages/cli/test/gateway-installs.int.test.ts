// Issue 12: npm, pnpm and yarn (classic and berry) installs still succeed through the egress
// gateway. Each fixture pins a real package of the npm registry in its lockfile; the create runs
// through the bin under clone-then-cut, so the install's only way out is the sandbox's gateway.
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { dockerReachable, forceRemoveSandbox, LIFECYCLE_BUILT, remainingObjects, runBin } from './_bin.js';

const READY = LIFECYCLE_BUILT && dockerReachable();
const FIXTURES = fileURLToPath(new URL('../../build/test/fixtures/', import.meta.url));

interface Case {
  manager: string;
  fixture: string;
  /** The registry host the lockfile names: the gateway must have let the install reach it. */
  registry: string;
}

const CASES: Case[] = [
  // package-lock.json, npm of the base image.
  { manager: 'npm', fixture: 'node-esm', registry: 'registry.npmjs.org' },
  // pnpm-lock.yaml; pnpm 10 itself is installed from the registry through the gateway first.
  { manager: 'pnpm', fixture: 'gateway-pnpm', registry: 'registry.npmjs.org' },
  // Classic yarn.lock (registry.yarnpkg.com), packageManager yarn@1.
  { manager: 'yarn classic', fixture: 'gateway-yarn-classic', registry: 'registry.yarnpkg.com' },
  // yarn berry (.yarnrc.yml, packageManager yarn@4): its release is not committed here, so the
  // pinned one comes from the registry; yarn 2+ reads no proxy variable (YARN_HTTPS_PROXY).
  { manager: 'yarn berry', fixture: 'yarn-berry', registry: 'registry.yarnpkg.com' },
];

const work = mkdtempSync(join(tmpdir(), 'ca-sbx-gateway-installs-'));
const ids: string[] = [];
const images = new Set<string>();

afterAll(() => {
  for (const id of ids) forceRemoveSandbox(id);
  for (const image of images) execFileSync('docker', ['image', 'rm', '--force', image], { stdio: 'ignore' });
  rmSync(work, { recursive: true, force: true });
});

interface Decision {
  phase: string;
  destination: string;
  allowed: boolean;
  count: number;
}

describe.skipIf(!READY)('installs through the egress gateway (real engine, real registry)', () => {
  for (const { manager, fixture, registry } of CASES) {
    it(`${manager}: the locked dependency is installed and the registry is on the record as allowed`, async () => {
      // A copy at a path of its own: a fresh source key, so the install really runs (no cache hit).
      const repo = join(work, fixture);
      cpSync(join(FIXTURES, fixture), repo, { recursive: true });
      const id = `sbx-${randomUUID().slice(0, 8)}`;
      ids.push(id);
      const created = await runBin(['create', repo, '--json', '--name', id, '--network', 'clone-then-cut']);
      expect(created.code, created.stderr).toBe(0);
      const record = JSON.parse(created.stdout) as { image: string; depsInstalled: boolean };
      images.add(record.image);
      expect(record.depsInstalled).toBe(true);

      const required = await runBin([
        'exec',
        id,
        '--',
        'node',
        '-e',
        "process.stdout.write(String(require('is-number')(7)))",
      ]);
      expect(required.code, required.stderr).toBe(0);
      expect(required.stdout).toBe('true');

      const egress = await runBin(['egress', id, '--json']);
      expect(egress.code, egress.stderr).toBe(0);
      const decisions = JSON.parse(egress.stdout) as Decision[];
      console.info(
        `${manager} through the gateway: ${decisions.map((d) => `${d.phase} ${d.allowed ? 'allowed' : 'REFUSED'} ${d.destination} (${d.count}x)`).join('; ')}`,
      );
      expect(decisions).toContainEqual(
        expect.objectContaining({ phase: 'install', destination: `${registry}:443`, allowed: true }),
      );

      const destroyed = await runBin(['destroy', id, '--json']);
      expect(destroyed.code, destroyed.stderr).toBe(0);
      expect(remainingObjects(id)).toEqual([]);
    });
  }
});
