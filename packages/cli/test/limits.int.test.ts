// Issue 13.6 (validation) and 13.7 (noise): sizes as docker reads them, bounds from the engine,
// and a create whose output is only what it says it is.
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  dockerReachable,
  forceRemoveSandbox,
  LIFECYCLE_BUILT,
  remainingObjects,
  runBin,
  runBinInTerminal,
} from './_bin.js';

const READY = LIFECYCLE_BUILT && dockerReachable();

function engine(): { cpus: number; memTotal: number } {
  const [cpus, memTotal] = execFileSync('docker', ['info', '--format', '{{.NCPU}} {{.MemTotal}}'], {
    encoding: 'utf8',
  })
    .trim()
    .split(' ')
    .map(Number);
  return { cpus: cpus ?? 0, memTotal: memTotal ?? 0 };
}

describe.skipIf(!READY)('create limits through the bin (real engine)', () => {
  const work = mkdtempSync(join(tmpdir(), 'ca-sbx-limits-'));
  const made: string[] = [];
  const newId = () => {
    const id = `sbx-${randomUUID().slice(0, 8)}`;
    made.push(id);
    return id;
  };
  writeFileSync(join(work, 'README.md'), 'limits fixture\n');

  afterAll(() => {
    for (const id of made) forceRemoveSandbox(id);
    rmSync(work, { recursive: true, force: true });
  });

  it.each([
    [['--memory', '1k'], "error: invalid value for --memory: 1k is below docker's minimum of 6 MiB"],
    [['--memory', '5m'], "error: invalid value for --memory: 5m is below docker's minimum of 6 MiB"],
    [['--memory', 'lots'], "error: invalid value for --memory: 'lots' is not a number with an optional unit"],
    [['--cpus', '0.001'], "error: invalid value for --cpus: 0.001 is below docker's minimum of 0.01"],
    [['--pids', '8'], 'error: invalid value for --pids: 8 is not a whole number from 16 to 1000000'],
  ])('%j: exit 2, one line naming the flag, the value and the limit', async (flags, message) => {
    const id = newId();
    const result = await runBin(['create', work, '--name', id, ...flags]);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr.startsWith(message)).toBe(true);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(remainingObjects(id)).toEqual([]);
  });

  it("refuses more cpus or memory than the engine has (docker's own NCPU and MemTotal)", async () => {
    const { cpus, memTotal } = engine();
    const id = newId();
    const tooManyCpus = await runBin(['create', work, '--name', id, '--cpus', String(cpus + 97), '--json']);
    expect(tooManyCpus.code).toBe(2);
    expect(JSON.parse(tooManyCpus.stderr.trim().split('\n').at(-1) ?? '')).toEqual({
      error: {
        code: 'LIMIT_OUT_OF_RANGE',
        message: `invalid value for --cpus: ${cpus + 97} is more than the docker engine's ${cpus} cpu${cpus === 1 ? '' : 's'}`,
      },
    });
    const tooMuchMemory = await runBin(['create', work, '--name', id, '--memory', '100000g']);
    expect(tooMuchMemory.code).toBe(2);
    expect(tooMuchMemory.stderr).toMatch(
      /^error: invalid value for --memory: 100000g is more than the docker engine's memory \(\d+(\.\d)? GiB\)\n$/m,
    );
    expect(memTotal).toBeGreaterThan(0);
    expect(remainingObjects(id)).toEqual([]);
  });

  it('takes --memory 2gb as docker does, and a create of a directory with a big file prints nothing but its JSON', async () => {
    const id = newId();
    // Over 700 KiB: packing it used to pile listeners on the tar entry (MaxListenersExceededWarning).
    writeFileSync(join(work, 'big.bin'), Buffer.alloc(3 * 1024 * 1024, 1));
    const result = await runBin(['create', work, '--name', id, '--memory', '2gb', '--cpus', '0.5', '--json']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ id });
    const limits = execFileSync(
      'docker',
      ['inspect', '--format', '{{.HostConfig.Memory}} {{.HostConfig.NanoCpus}}', `ca-sbx-${id}`],
      { encoding: 'utf8' },
    ).trim();
    expect(limits).toBe(`${2 * 1024 ** 3} 500000000`);
    const quiet = await runBin(['destroy', id, '-q']);
    expect(quiet.code).toBe(0);
    expect(quiet.stderr).toBe('');
  });

  it('progress: verify is timed (not 0ms) and create says what to do next', async () => {
    const id = newId();
    const result = await runBin(['create', work, '--name', id]);
    expect(result.code).toBe(0);
    const verify = /^verify: done in (\d+)ms \((\d+) isolation checks passed\)$/m.exec(result.stderr);
    expect(verify, result.stderr).not.toBeNull();
    expect(Number(verify?.[1])).toBeGreaterThan(0);
    expect(result.stderr).toMatch(/^run: done in .* \(ca-sbx-sbx-/m);
    expect(result.stderr).toContain(`next     ca-sandbox shell ${id}`);
    expect(result.stderr).not.toMatch(/MaxListenersExceededWarning/);
    await runBin(['destroy', id, '-q']);
  });

  it('run does not tell its user to run shell and destroy, which it does itself', async () => {
    const id = newId();
    const result = await runBinInTerminal(['run', work, '--name', id], /\[sandbox [^\]]+\] /, 'exit 0\n');
    expect(result.code).toBe(0);
    expect(result.output).toMatch(/^sandbox ready: /m);
    expect(result.output).not.toMatch(/next\s+ca-sandbox shell/);
    expect(remainingObjects(id)).toEqual([]);
  });

  it("the build log shows the install's own output, not the builder's framing of our Dockerfile", async () => {
    const id = newId();
    const repo = join(work, 'install-output');
    execFileSync('mkdir', ['-p', repo]);
    // A unique package name: a new dephash, so a real build (never a cache hit). The repo's own
    // lifecycle scripts are skipped; its .pnpmfile.cjs is code the install itself runs.
    writeFileSync(
      join(repo, 'package.json'),
      JSON.stringify({ name: id, version: '1.0.0', packageManager: 'pnpm@9.15.9' }),
    );
    writeFileSync(
      join(repo, '.pnpmfile.cjs'),
      `console.log(${JSON.stringify(`install-marker-${id}`)});\nmodule.exports = {};\n`,
    );
    const result = await runBin(['create', repo, '--name', id, '--network', 'clone-then-cut', '--verbose']);
    expect(result.code, result.stderr).toBe(0);
    const logLines = result.stderr.split('\n').filter((line) => line.startsWith('  | '));
    expect(logLines).toContain(`  | install-marker-${id}`);
    for (const line of logLines) {
      expect(line).not.toMatch(
        /^ {2}\| (Step \d+\/\d+ : | ---> |Removing intermediate container|Successfully (built|tagged)|DEPRECATED: )/,
      );
    }
    await runBin(['destroy', id, '-q']);
  }, 300_000);
});
