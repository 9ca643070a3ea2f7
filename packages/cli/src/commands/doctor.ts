import { execFile } from 'node:child_process';
import { PrerequisiteError } from '../errors.js';
import type { Output } from '../output.js';
import { sanitizeLine } from '../sanitize.js';

export type CheckStatus = 'ok' | 'warn' | 'fail';

/** One line of the doctor's checklist; `fix` says what to do when it is not ok. */
export interface DoctorCheck {
  check: string;
  status: CheckStatus;
  required: boolean;
  detail: string;
  fix?: string;
}

const PROVIDERS = ['node', 'python', 'go', 'rust', 'plain'] as const;
const DEFAULT_HELPER_IMAGE = 'ca-sbx-base:git';
const SEED_HINT = 'build the local base images: bash scripts/seed-images.sh (or docker pull the image)';

function problem(error: unknown): string {
  return sanitizeLine(error instanceof Error ? error.message : String(error));
}

function runVersion(binary: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    execFile(
      binary,
      ['--version'],
      { timeout: 10_000, env: { PATH: process.env.PATH ?? '' } },
      (error, stdout) => resolve(error ? undefined : stdout.trim().split('\n')[0]),
    );
  });
}

/** The images create needs: the clone helper, and every base image the environment names. */
export function configuredImages(
  env: NodeJS.ProcessEnv,
): { check: string; image: string; required: boolean }[] {
  const images = [
    { check: 'helper image', image: env.CA_SANDBOX_HELPER_IMAGE || DEFAULT_HELPER_IMAGE, required: true },
  ];
  if (env.CA_SANDBOX_BASE_IMAGE)
    images.push({ check: 'base image', image: env.CA_SANDBOX_BASE_IMAGE, required: false });
  for (const provider of PROVIDERS) {
    const image = env[`CA_SANDBOX_BASE_IMAGE_${provider.toUpperCase()}`];
    if (image) images.push({ check: `base image (${provider})`, image, required: false });
  }
  return images;
}

/** Runs every check; none of them throws. */
export async function runDoctor(env: NodeJS.ProcessEnv = process.env): Promise<DoctorCheck[]> {
  const docker = await import('@ca-sandbox/docker');
  const checks: DoctorCheck[] = [];
  let runtimes: string[] | undefined;
  try {
    const info = await docker.dockerInfo();
    runtimes = info.runtimes;
    checks.push({
      check: 'docker',
      status: 'ok',
      required: true,
      detail: `engine ${sanitizeLine(info.serverVersion)} reachable (${sanitizeLine(info.storageDriver || 'unknown driver')}, cgroup v${sanitizeLine(info.cgroupVersion || '?')})`,
    });
  } catch (error) {
    checks.push({
      check: 'docker',
      status: 'fail',
      required: true,
      detail: problem(error),
      fix: docker.DOCKER_HINT,
    });
  }
  if (runtimes) {
    checks.push(
      runtimes.includes('runc')
        ? { check: 'runtime runc', status: 'ok', required: true, detail: 'registered' }
        : {
            check: 'runtime runc',
            status: 'fail',
            required: true,
            detail: 'not registered',
            fix: 'reinstall docker (runc ships with it)',
          },
      runtimes.includes('runsc')
        ? {
            check: 'runtime runsc',
            status: 'ok',
            required: false,
            detail: 'gVisor registered (--runtime runsc)',
          }
        : {
            check: 'runtime runsc',
            status: 'warn',
            required: false,
            detail: 'gVisor not registered; --runtime runsc unavailable (the box shares the host kernel)',
            fix: 'install gVisor (https://gvisor.dev/docs/user_guide/install/), run `runsc install` and restart dockerd',
          },
    );
    for (const { check, image, required } of configuredImages(env)) {
      const present = await docker.imageExists(image).catch(() => false);
      checks.push(
        present
          ? { check, status: 'ok', required, detail: `${sanitizeLine(image)} present` }
          : {
              check,
              status: required ? 'fail' : 'warn',
              required,
              detail: `${sanitizeLine(image)} missing`,
              fix: SEED_HINT,
            },
      );
    }
  }
  const nixpacks = await runVersion('nixpacks');
  checks.push(
    nixpacks
      ? { check: 'nixpacks', status: 'ok', required: false, detail: sanitizeLine(nixpacks) }
      : {
          check: 'nixpacks',
          status: 'warn',
          required: false,
          detail: 'not on PATH; only needed for --builder nixpacks',
          fix: 'install it: curl -sSL https://nixpacks.com/install.sh | bash',
        },
  );
  checks.push(await firewallCheck());
  return checks;
}

async function firewallCheck(): Promise<DoctorCheck> {
  const check = 'iptables (allowlist)';
  try {
    const network = (await import('@ca-sandbox/network')) as { assertFirewallUsable?: () => Promise<void> };
    if (!network.assertFirewallUsable) throw new Error('firewall check not available in this build');
    await network.assertFirewallUsable();
    return { check, status: 'ok', required: false, detail: 'DOCKER-USER chain usable' };
  } catch (error) {
    const hint = (error as { hint?: unknown }).hint;
    return {
      check,
      status: 'warn',
      required: false,
      detail: `${problem(error)}; --network allowlist unavailable`,
      fix:
        typeof hint === 'string'
          ? hint
          : 'install iptables and run ca-sandbox as root (only needed for --network allowlist)',
    };
  }
}

/** `ca-sandbox doctor`: a checklist with a fix per missing item; exit 3 when a required item is missing. */
export async function doctorCommand(out: Output): Promise<number> {
  const checks = await runDoctor();
  const ok = checks.every((c) => c.status !== 'fail');
  if (out.options.json) {
    out.json({ ok, checks });
  } else {
    const marks: Record<CheckStatus, string> = {
      ok: out.green('✓'),
      warn: out.yellow('!'),
      fail: out.red('✗'),
    };
    for (const c of checks) {
      out.result(`${marks[c.status]} ${out.bold(c.check)}: ${c.detail}`);
      if (c.fix && c.status !== 'ok') out.result(`    ${out.dim('fix:')} ${c.fix}`);
    }
  }
  if (!ok) {
    const missing = checks.filter((c) => c.status === 'fail').map((c) => c.check);
    throw new PrerequisiteError(
      `missing prerequisite: ${missing.join(', ')}`,
      checks.find((c) => c.status === 'fail')?.fix ?? 'see the checklist above',
      'DOCTOR_FAILED',
    );
  }
  return 0;
}
