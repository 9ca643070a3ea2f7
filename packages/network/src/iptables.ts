import { accessSync, constants, existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { FirewallCommandError, FirewallUnavailableError } from './errors.js';

export type Family = 4 | 6;

export interface IptablesResult {
  argv: string[];
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** Where iptables lives when PATH lacks the sbin directories (non-login root shells). */
const SBIN = ['/usr/sbin', '/sbin', '/usr/local/sbin'];

/** The first executable `name` on `searchPath` (then the sbin directories), or undefined. */
export function findExecutable(name: string, searchPath = process.env.PATH ?? ''): string | undefined {
  const dirs = [...searchPath.split(delimiter).filter(Boolean), ...SBIN];
  for (const dir of dirs) {
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here; try the next directory
    }
  }
  return undefined;
}

export function commandName(family: Family): 'iptables' | 'ip6tables' {
  return family === 4 ? 'iptables' : 'ip6tables';
}

function binary(family: Family): string {
  const found = findExecutable(commandName(family));
  if (!found) throw new FirewallUnavailableError(`${commandName(family)} was not found on PATH`);
  return found;
}

/**
 * Runs `iptables|ip6tables -w 10 <args>` (argv, never a shell). `-w` waits for the xtables lock
 * that dockerd also takes. Throws FirewallCommandError on a non-zero exit unless `allowFailure`.
 */
export async function iptables(
  family: Family,
  args: readonly string[],
  options: { allowFailure?: boolean } = {},
): Promise<IptablesResult> {
  const argv = ['-w', '10', ...args];
  // Loaded on use: execa costs every command that loads the network package ~40 ms of start-up,
  // and only an allowlist of addresses (its set-up, check and teardown) runs iptables.
  const { execa } = await import('execa');
  const result = await execa(binary(family), argv, {
    env: { PATH: process.env.PATH ?? SBIN.join(delimiter), LC_ALL: 'C' },
    extendEnv: false,
    reject: false,
    stdin: 'ignore',
    timeout: 30_000,
  });
  if (result.exitCode === undefined) {
    const code = (result as { code?: string }).code;
    if (code === 'ENOENT') throw new FirewallUnavailableError(`${commandName(family)} could not be started`);
    throw new FirewallCommandError([commandName(family), ...argv], -1, String(result.message ?? ''));
  }
  const outcome: IptablesResult = {
    argv: [commandName(family), ...argv],
    exitCode: result.exitCode,
    stdout: String(result.stdout ?? ''),
    stderr: String(result.stderr ?? ''),
  };
  if (outcome.exitCode !== 0 && /permission denied|you must be root/i.test(outcome.stderr)) {
    throw new FirewallUnavailableError(`${commandName(family)} needs root (permission denied)`);
  }
  if (outcome.exitCode !== 0 && !options.allowFailure) {
    throw new FirewallCommandError(outcome.argv, outcome.exitCode, outcome.stderr);
  }
  return outcome;
}

/** The kernel has IPv6 (then ip6tables rules are required too, as defence in depth). */
export function kernelHasIPv6(): boolean {
  return existsSync('/proc/net/if_inet6');
}

/** The families whose rules we install on this host. */
export function firewallFamilies(): Family[] {
  return kernelHasIPv6() ? [4, 6] : [4];
}

/**
 * Throws FirewallUnavailableError (kind 'prerequisite', with a hint) unless the allowlist can be
 * enforced here: Linux, root, iptables (and ip6tables when the kernel has IPv6) runnable, and
 * Docker's DOCKER-USER chain present in the iptables backend we see (nft vs legacy mismatch).
 */
export async function assertFirewallUsable(): Promise<void> {
  if (process.platform !== 'linux') {
    throw new FirewallUnavailableError(`host firewall rules need Linux (this is ${process.platform})`);
  }
  const uid = process.getuid?.();
  if (uid !== 0) {
    throw new FirewallUnavailableError(
      `changing iptables rules needs root (running as uid ${uid ?? 'unknown'})`,
      'run ca-sandbox as root (e.g. sudo) for --network allowlist, or pick --network offline or clone-then-cut',
    );
  }
  const chain = await iptables(4, ['-S', 'DOCKER-USER'], { allowFailure: true });
  if (chain.exitCode !== 0) {
    const reason = chain.stderr.trim().split('\n').at(-1)?.slice(0, 200) ?? '';
    throw new FirewallUnavailableError(
      `docker's DOCKER-USER chain is not visible to ${chain.argv[0]} (${reason || `exit ${chain.exitCode}`})`,
      'start dockerd with iptables management on (the default; not --iptables=false) and make `iptables` the same backend dockerd uses (update-alternatives --display iptables: nft vs legacy)',
    );
  }
  if (kernelHasIPv6()) {
    const v6 = await iptables(6, ['-S', 'INPUT'], { allowFailure: true });
    if (v6.exitCode !== 0) {
      throw new FirewallUnavailableError(`ip6tables does not work (${v6.stderr.trim().slice(0, 200)})`);
    }
  }
}
