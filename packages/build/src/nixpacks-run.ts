import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// Running the nixpacks binary, apart from the plan translation (nixpacks.ts): selectBuilder asks
// for the version on every create, and a cache hit should not load the recipes to do so.

/** The environment nixpacks runs with: PATH only, so no host NIXPACKS_* variable steers the plan. */
export function nixpacksEnv(home: string): Record<string, string> {
  return { PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin', HOME: home };
}

export function runNixpacks(
  argv: string[],
  env: Record<string, string>,
  timeout: number,
): Promise<{ stdout: string; stderr: string; code: number | string | null }> {
  return new Promise((resolve) => {
    execFile(
      argv[0] ?? 'nixpacks',
      argv.slice(1),
      { env, timeout, maxBuffer: 8 * 1024 * 1024, encoding: 'utf8' },
      (error, stdout, stderr) => {
        const code = error
          ? ((error as NodeJS.ErrnoException).code ?? (error as { status?: number }).status ?? 1)
          : 0;
        resolve({ stdout, stderr, code: code as number | string | null });
      },
    );
  });
}

/** `nixpacks --version` → the version, or undefined when nixpacks is not on PATH. */
export async function nixpacksVersion(): Promise<string | undefined> {
  const home = await mkdtemp(join(tmpdir(), 'ca-sbx-nixpacks-'));
  try {
    const result = await runNixpacks(
      [process.env.CA_SANDBOX_NIXPACKS_BIN ?? 'nixpacks', '--version'],
      nixpacksEnv(home),
      10_000,
    );
    if (result.code !== 0) return undefined;
    const match = /(\d+\.\d+\.\d+[0-9A-Za-z.+-]*)/.exec(result.stdout);
    return match?.[1] ?? (result.stdout.trim().slice(0, 64) || 'unknown');
  } finally {
    await rm(home, { recursive: true, force: true });
  }
}
