import {
  BOX_TRUST_ENV,
  BOX_TRUST_SCRIPT,
  CA_TRUST_ENV,
  loadExtraCa,
  type Toolchain,
} from '@ca-sandbox/build';
import { currentSettings } from '@ca-sandbox/config';
import { engine } from '@ca-sandbox/docker';
import type { EgressGateway } from '@ca-sandbox/run';
import { proxyEnv } from './egress.js';
import { BoxTrustError } from './errors.js';

/**
 * Addresses a box's clients never send to the gateway: its own loopback (a test server the repo
 * starts on localhost; the gateway would refuse it as a loopback address anyway).
 */
export const BOX_NO_PROXY = 'localhost,127.0.0.1,::1';

/**
 * Node's built-in `fetch` (and, from 22.21/24.5, http and https) read HTTP(S)_PROXY only with
 * NODE_USE_ENV_PROXY=1; each node start then prints an experimental warning whose code is
 * UNDICI-EHPA, which is turned off by that code alone (other warnings still print).
 */
export const NODE_ENV_PROXY: Readonly<Record<string, string>> = {
  NODE_USE_ENV_PROXY: '1',
  NODE_OPTIONS: '--disable-warning=UNDICI-EHPA',
};

/** Whether a node version reads NODE_USE_ENV_PROXY (22.21+, 24.5+, 25+); an older node would ignore it. */
export function nodeReadsEnvProxy(version: string | undefined): boolean {
  const match = /^(\d+)\.(\d+)\./.exec(version ?? '');
  if (!match) return false;
  const [major, minor] = [Number(match[1]), Number(match[2])];
  return major >= 25 || (major === 24 && minor >= 5) || (major === 22 && minor >= 21);
}

export interface BoxEnvInput {
  /** The box's own egress gateway (an allowlist of domains or ports); none otherwise. */
  gateway?: EgressGateway | undefined;
  /** Whether the box can reach anything at all (allowlist, by gateway or by firewall rules). */
  reachesNetwork: boolean;
  /** The image's toolchain label (node's version decides NODE_ENV_PROXY). */
  toolchain: Toolchain;
  /** The digest of the CA bundle baked into the image ('' none; PreparedImage.trustedCa). */
  trustedCa: string;
  /** Its gateway adds credentials: the box trusts the gateway's CA too (BOX_TRUST_ENV). */
  gatewayCa?: boolean;
}

/**
 * The one home of a box's environment (beside the image's own): what makes its tools work as on
 * a developer's machine behind the same proxy. An offline or clone-then-cut box reaches nothing
 * and gets nothing (no proxy, no CA variable). A box that reaches the network trusts the user's
 * CA bundle baked into its image (the variables of CA_TRUST_ENV, as the install step did); a box
 * behind its gateway also gets the gateway in HTTP(S)_PROXY, its loopback kept local (NO_PROXY),
 * and node's fetch pointed at it when its node reads NODE_USE_ENV_PROXY. Nothing here comes from
 * the repo.
 */
export function boxEnv(input: BoxEnvInput): Record<string, string> {
  if (!input.reachesNetwork) return {};
  const trust = input.gatewayCa ? BOX_TRUST_ENV : input.trustedCa ? CA_TRUST_ENV : {};
  return {
    ...trust,
    ...(input.gateway
      ? {
          ...proxyEnv(input.gateway),
          NO_PROXY: BOX_NO_PROXY,
          no_proxy: BOX_NO_PROXY,
          ...(nodeReadsEnvProxy(input.toolchain.node) ? NODE_ENV_PROXY : {}),
        }
      : {}),
  };
}

/** The user's CA certificates (setting caCertificates), for the gateway's own upstream TLS; '' none. */
export function userCaPem(): string {
  const path = currentSettings().value('caCertificates');
  return path ? loadExtraCa(path).pem.toString('utf8') : '';
}

/**
 * Writes the bundles of BOX_TRUST_ENV into a started box (root, on its tmpfs: gone at each stop,
 * so `start` writes them again): the image's CAs and the gateway's, whose certificates the box
 * sees for the credential domains.
 */
export async function writeBoxTrust(container: string, gatewayCa: string): Promise<void> {
  const wrote = await engine.exec.internal(container, ['/bin/sh', '-c', BOX_TRUST_SCRIPT], {
    user: '0:0',
    stdin: true,
    input: gatewayCa,
    timeoutMs: 15_000,
  });
  if (wrote.exitCode !== 0) throw new BoxTrustError(container, wrote.stderr.trim().slice(0, 200));
}
