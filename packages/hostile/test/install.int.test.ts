import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { docker } from '@ca-sandbox/docker/cli';
import { afterAll, describe, expect, it } from 'vitest';
import {
  cli,
  createBox,
  destroyBox,
  destroyLeftovers,
  FIXTURES,
  parseJson,
  RUNTIMES,
  type SandboxRecord,
} from './_harness.js';

/** Bytes that drive a terminal: ESC, BEL, C1 controls (raw or UTF-8 encoded) and bidi overrides. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching terminal controls is the point
const TERMINAL_CONTROL = /[\u0007\u001b\u0080-\u009f\u202a-\u202e\u2066-\u2069]/u;
const fixtures = join(FIXTURES, 'install-hostile');
const state = mkdtempSync(join(tmpdir(), 'ca-hostile-state-'));
const env = { XDG_STATE_HOME: state };

afterAll(async () => {
  await destroyLeftovers();
  rmSync(state, { recursive: true, force: true });
});

describe('hostile install output', () => {
  // The install runs in `docker build` whatever the box's runtime: one run covers both.
  it('a failing install that prints terminal controls: exit 1, its lines shown neutralised (text and --json)', async () => {
    const text = await cli(['create', join(fixtures, 'fails'), '--network', 'clone-then-cut'], env);
    expect(text.exitCode).toBe(1);
    expect(text.stderr).toMatch(
      /^error: dependency install failed \(the install step of \S+ exited \d+\): npm error/m,
    );
    expect(text.stderr).toContain('npm error fake cause');
    expect(text.stderr).not.toMatch(TERMINAL_CONTROL);
    const json = await cli(['create', join(fixtures, 'fails'), '--network', 'clone-then-cut', '--json'], env);
    expect(json.exitCode).toBe(1);
    expect(json.stderr).not.toMatch(TERMINAL_CONTROL);
    const error = JSON.parse(json.stderr.trim().split('\n').at(-1) ?? '{}').error as { details: string[] };
    expect(error.details.join('\n')).toContain('npm error fake cause');
    for (const line of error.details) expect(line).not.toMatch(TERMINAL_CONTROL);
  });

  for (const runtime of RUNTIMES) {
    it(`an install that fakes our toolchain marker changes neither the record nor the image's labels (${runtime})`, async () => {
      const box = await createBox(join(fixtures, 'fake-toolchain'), {
        runtime,
        network: 'clone-then-cut',
        env,
      });
      const record = box as unknown as { toolchain: Record<string, string>; image: string };
      // Our probe runs after every install script: its line is the one taken.
      expect(record.toolchain.node).toMatch(/^22\./);
      expect(record.toolchain).not.toHaveProperty('evil');
      const labels = JSON.parse(
        (await docker(['image', 'inspect', '--format', '{{json .Config.Labels}}', record.image])).stdout,
      ) as Record<string, string>;
      // Not a sandbox object: empty (UNOWNED_IMAGE_LABELS, over the build steps' sandbox labels).
      expect(labels['ca.sandbox'] ?? '').toBe('');
      expect(labels['ca.sandbox.id'] ?? '').toBe('');
      expect(labels.x).toBeUndefined();
      expect(labels['ca.sandbox.toolchain']).toMatch(/^node=22\.[0-9.]+,npm=/);
      await destroyBox(box.id);
    });
  }

  // The probe shares the install's step: a process the install leaves running could write after
  // its line. The build runs whatever the box's runtime: one run covers both.
  it("a process the install leaves writing fake toolchain lines is ended before the probe: neither the record nor the image's labels change", async () => {
    const name = `hostile-late-${randomUUID().slice(0, 8)}`;
    // Text mode: --verbose shows the install's output there (not with --json).
    const result = await cli(
      [
        'create',
        join(fixtures, 'fake-toolchain-late'),
        '--verbose',
        '--name',
        name,
        '--network',
        'clone-then-cut',
      ],
      env,
    );
    expect(result.exitCode, result.stderr).toBe(0);
    const listed = parseJson<(SandboxRecord & { toolchain: Record<string, string>; image: string })[]>(
      await cli(['list', '--json']),
    );
    const record = listed.find((entry) => entry.id === name);
    if (!record) throw new Error(`${name} is not listed`);
    try {
      // It ran (its lines are in the install's output, neutralised)...
      expect(result.stderr).toContain('ca-sbx-toolchain:node=6.6.6');
      // ...and the line taken is the probe's, after the kill.
      expect(record.toolchain.node).toMatch(/^22\./);
      expect(record.toolchain).not.toHaveProperty('evil');
      const labels = JSON.parse(
        (await docker(['image', 'inspect', '--format', '{{json .Config.Labels}}', record.image])).stdout,
      ) as Record<string, string>;
      // Not a sandbox object: empty (UNOWNED_IMAGE_LABELS, over the build steps' sandbox labels).
      expect(labels['ca.sandbox'] ?? '').toBe('');
      expect(labels['ca.sandbox.id'] ?? '').toBe('');
      expect(labels.x).toBeUndefined();
      expect(labels['ca.sandbox.toolchain']).toMatch(/^node=22\.[0-9.]+,npm=/);
    } finally {
      await destroyBox(record.id);
      // Built again on every run: a cached image would not exercise the install.
      await docker(['image', 'rm', record.image]);
    }
  });
});
