import { type DockerInfo, type Runtime, runtimeIsNetworkless } from '@ca-sandbox/docker';
import type { NetworkPolicy } from '@ca-sandbox/network';
import { InvalidOptionsError } from './errors.js';

/** Why runsc cannot run an allowlist box on a host where it is registered with --network=none. */
export const RUNSC_NETWORKLESS =
  'gVisor is registered with --network=none (its own network stack is off on this host), so a runsc box cannot join the network its allowlist needs';

export interface RuntimeChoice {
  runtime: Runtime;
  /** One line for the user when the box does not get what was asked or implied (why not gVisor). */
  notice?: string;
}

/**
 * The box's runtime, once the engine is known. A named runtime is kept, but runsc with an allowlist
 * is refused where runsc has no network (usage: the message says why). Without a name: runc, except
 * for `--with-claude`, which takes gVisor where it can run the allowlist box, and otherwise says in
 * one line why the box shares the host kernel.
 */
export function chooseRuntime(
  request: { runtime: Runtime; runtimeGiven: boolean; policy: NetworkPolicy; withClaude: boolean },
  info: Pick<DockerInfo, 'runtimes' | 'runtimeArgs'>,
): RuntimeChoice {
  const needsNetwork = request.policy === 'allowlist';
  if (request.runtimeGiven) {
    if (request.runtime === 'runsc' && needsNetwork && runtimeIsNetworkless(info, 'runsc'))
      throw new InvalidOptionsError(
        `runtime runsc cannot run an allowlist box here: ${RUNSC_NETWORKLESS}; use runtime runc, or the offline or clone-then-cut policy`,
      );
    return { runtime: request.runtime };
  }
  if (!request.withClaude) return { runtime: 'runc' };
  if (!info.runtimes.includes('runsc'))
    return {
      runtime: 'runc',
      notice:
        '--with-claude: the box runs under runc, sharing the host kernel: gVisor (runsc) is not installed here',
    };
  if (runtimeIsNetworkless(info, 'runsc'))
    return {
      runtime: 'runc',
      notice: `--with-claude: the box runs under runc, sharing the host kernel: ${RUNSC_NETWORKLESS}`,
    };
  return { runtime: 'runsc' };
}
