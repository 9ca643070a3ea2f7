import { readFile } from 'node:fs/promises';
import { sanitizeName } from '@ca-sandbox/docker/contracts';
import { PrerequisiteError } from '../errors.js';
import type { Output } from '../output.js';
import { RESOLVER_CVE, resolverExposure } from './doctor-resolver.js';

export type CheckStatus = 'ok' | 'warn' | 'fail';

/** One line of the doctor's checklist; `fix` says what to do when it is not ok. */
export interface DoctorCheck {
  check: string;
  status: CheckStatus;
  required: boolean;
  detail: string;
  fix?: string;
}

const IMAGE_HINT =
  'build the local base images (bash scripts/seed-images.sh) and name them in the configuration file (bash scripts/setup.sh writes it; see ca-sandbox config), or allow docker pull';

function problem(error: unknown): string {
  return sanitizeName(error instanceof Error ? error.message : String(error));
}

interface ImageNeed {
  check: string;
  image: string;
  required: boolean;
  source: string;
  /** How to get it, when it is not the generic hint (a provider seed-images.sh does not cover). */
  fix?: string;
}

/** The images create needs: the clone helper, and the base image each provider resolves to. */
export async function neededImages(env: NodeJS.ProcessEnv): Promise<ImageNeed[]> {
  const { loadSettings } = await import('@ca-sandbox/config');
  const settings = loadSettings({ env });
  const helper = settings.get('helperImage');
  const gateway = settings.get('gatewayImage');
  const needs: ImageNeed[] = [
    { check: 'helper image', image: helper.value ?? '', required: true, source: helper.source },
    {
      // URL clones, installs and allowlists of domains go through it.
      check: 'egress gateway image',
      image: gateway.value ?? '',
      required: true,
      source: gateway.source,
    },
  ];
  // The build package owns base-image resolution (flag > env > config > official default).
  const build = await import('@ca-sandbox/build');
  for (const provider of build.PROVIDERS) {
    try {
      const choice = build.resolveBaseImage(provider, { env });
      needs.push({
        check: `base image ${provider}`,
        image: choice.image,
        required: false,
        source: choice.source,
        fix: build.baseImageHint(provider),
      });
    } catch (error) {
      needs.push({
        check: `base image ${provider}`,
        image: problem(error),
        required: false,
        source: 'invalid',
      });
    }
  }
  return needs;
}

async function imageChecks(
  env: NodeJS.ProcessEnv,
  imageExists: (image: string) => Promise<boolean>,
): Promise<DoctorCheck[]> {
  const checks: DoctorCheck[] = [];
  for (const { check, image, required, source, fix } of await neededImages(env)) {
    const present = source !== 'invalid' && (await imageExists(image).catch(() => false));
    const where = source === 'default' ? 'official default' : source;
    checks.push(
      present
        ? { check, status: 'ok', required, detail: `${sanitizeName(image)} present (${where})` }
        : {
            check,
            status: required ? 'fail' : 'warn',
            required,
            detail: `${sanitizeName(image)} not present locally (${where})${required ? '' : '; create pulls it for that provider'}`,
            fix: fix ?? IMAGE_HINT,
          },
    );
  }
  return checks;
}

async function nixpacksCheck(): Promise<DoctorCheck> {
  const build = await import('@ca-sandbox/build');
  const version = await build.nixpacksVersion().catch(() => undefined);
  return version
    ? { check: 'nixpacks', status: 'ok', required: false, detail: `version ${sanitizeName(version)}` }
    : {
        check: 'nixpacks',
        status: 'warn',
        required: false,
        detail: 'not on PATH; only needed for --builder nixpacks',
        fix: 'install it: curl -sSL https://nixpacks.com/install.sh | bash',
      };
}

async function firewallCheck(): Promise<DoctorCheck> {
  const check = 'iptables (allowlist)';
  try {
    const network = await import('@ca-sandbox/network');
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

/** The configuration file: where it is, and whether it (and every CA_SANDBOX_* setting) is valid. */
async function configCheck(env: NodeJS.ProcessEnv): Promise<DoctorCheck> {
  const { loadSettings } = await import('@ca-sandbox/config');
  try {
    const { file } = loadSettings({ env });
    const detail = file.exists
      ? `${sanitizeName(file.path)}`
      : `no file at ${sanitizeName(file.path)} (defaults and environment only)`;
    return {
      check: 'configuration',
      status: 'ok',
      required: true,
      detail,
      ...(file.exists ? {} : { fix: 'bash scripts/setup.sh writes it' }),
    };
  } catch (error) {
    return {
      check: 'configuration',
      status: 'fail',
      required: true,
      detail: problem(error),
      fix: 'fix or remove the named setting (ca-sandbox config path prints the file)',
    };
  }
}

/** The engine's embedded resolver on internal networks (see doctor-resolver.ts). */
async function resolverCheck(engine: string): Promise<DoctorCheck> {
  const check = `internal-network DNS (${RESOLVER_CVE})`;
  const resolvConf = await readFile('/etc/resolv.conf', 'utf8').catch(() => '');
  const exposure = resolverExposure(engine, resolvConf);
  return exposure
    ? {
        check,
        status: 'warn',
        required: false,
        detail: sanitizeName(exposure),
        fix: 'upgrade the engine to 26.0 or later (or 25.0.5, 23.0.11), or point /etc/resolv.conf at a resolver off loopback',
      }
    : {
        check,
        status: 'ok',
        required: false,
        detail: 'the engine has the fix, or the host resolver is not on loopback',
      };
}

/** Runs every check; none of them throws. */
export async function runDoctor(env: NodeJS.ProcessEnv = process.env): Promise<DoctorCheck[]> {
  const docker = await import('@ca-sandbox/docker');
  const config = await configCheck(env);
  const checks: DoctorCheck[] = [config];
  try {
    const info = await docker.dockerInfo();
    checks.push({
      check: 'docker',
      status: 'ok',
      required: true,
      detail: `engine ${sanitizeName(info.serverVersion)} reachable (${sanitizeName(info.storageDriver || 'unknown driver')}, cgroup v${sanitizeName(info.cgroupVersion || '?')})`,
    });
    checks.push(
      info.runtimes.includes('runc')
        ? { check: 'runtime runc', status: 'ok', required: true, detail: 'registered' }
        : {
            check: 'runtime runc',
            status: 'fail',
            required: true,
            detail: 'not registered',
            fix: 'reinstall docker (runc ships with it)',
          },
      info.runtimes.includes('runsc')
        ? {
            check: 'runtime runsc',
            status: 'ok',
            required: false,
            detail: 'gVisor registered (--runtime runsc, network-less boxes)',
          }
        : {
            check: 'runtime runsc',
            status: 'warn',
            required: false,
            detail: 'gVisor not registered; --runtime runsc unavailable (boxes share the host kernel)',
            fix: 'install gVisor (https://gvisor.dev/docs/user_guide/install/), run `runsc install` and restart dockerd',
          },
    );
    checks.push(await resolverCheck(info.serverVersion));
    // Image names come from the settings: without valid ones there is nothing to look for.
    if (config.status === 'ok') checks.push(...(await imageChecks(env, docker.imageExists)));
  } catch (error) {
    checks.push({
      check: 'docker',
      status: 'fail',
      required: true,
      detail: problem(error),
      fix: docker.DOCKER_HINT,
    });
  }
  checks.push(await nixpacksCheck());
  checks.push(await firewallCheck());
  return checks;
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
    const failed = checks.filter((c) => c.status === 'fail');
    throw new PrerequisiteError(
      `missing prerequisite: ${failed.map((c) => c.check).join(', ')}`,
      failed[0]?.fix ?? 'see the checklist',
      'DOCTOR_FAILED',
    );
  }
  return 0;
}
