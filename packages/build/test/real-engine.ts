// The real engine for the build package's integration tests: the base they build on, whether it is
// there (they skip without it), and a synchronous docker CLI call that throws on failure.
import { execFileSync } from 'node:child_process';

/** The seeded base image (scripts/seed-images.sh) the build tests build on. */
export const TEST_BASE = 'ca-sbx-base:debian';

/** Whether the engine answers and has TEST_BASE. */
export const engineReady: boolean = (() => {
  try {
    execFileSync('docker', ['image', 'inspect', TEST_BASE], { stdio: 'ignore', timeout: 20_000 });
    return true;
  } catch {
    return false;
  }
})();

/** `docker <args>`, its trimmed stdout; throws when docker exits non-zero. */
export const dockerSync = (...args: string[]): string =>
  execFileSync('docker', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
