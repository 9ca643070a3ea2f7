import { CaSandboxError } from '@ca-sandbox/docker/contracts';
/** An `--allow` entry that is not an IPv4/IPv6 address or CIDR (a hostname, garbage, a zone id). */
export class InvalidAllowEntryError extends CaSandboxError {
  readonly code = 'INVALID_ALLOW_ENTRY';
  readonly kind = 'usage';
  constructor(
    readonly entry: string,
    reason: string,
  ) {
    super(reason);
  }
}

/** A network policy name we do not know. */
export class InvalidNetworkPolicyError extends CaSandboxError {
  readonly code = 'INVALID_NETWORK_POLICY';
  readonly kind = 'usage';
}

/** Extra labels for a sandbox network that are not plain `key=value` strings. */
export class InvalidNetworkLabelsError extends CaSandboxError {
  readonly code = 'INVALID_NETWORK_LABELS';
  readonly kind = 'usage';
}

/** A sandbox id outside `[a-z0-9][a-z0-9_.-]{0,62}`: the one error of @ca-sandbox/docker. */
export { InvalidSandboxIdError } from '@ca-sandbox/docker/contracts';

export const FIREWALL_HINT =
  'run as root on a Linux host with iptables (Debian: apt-get install iptables) and a dockerd that manages iptables (the DOCKER-USER chain); or pick --network offline or clone-then-cut';

/** iptables is missing, we are not root, or Docker's DOCKER-USER chain is absent (exit 3). */
export class FirewallUnavailableError extends CaSandboxError {
  readonly code = 'FIREWALL_UNAVAILABLE';
  readonly kind = 'prerequisite';
  declare readonly hint: string;
  constructor(detail: string, hint = FIREWALL_HINT) {
    super(`the allowlist firewall is not usable: ${detail}`, { hint });
  }
}

/** An iptables command ran and failed. */
export class FirewallCommandError extends CaSandboxError {
  readonly code = 'FIREWALL_FAILED';
  readonly kind = 'failure';
  constructor(
    readonly argv: readonly string[],
    readonly exitCode: number,
    readonly stderr: string,
  ) {
    super(
      `${argv[0] ?? 'iptables'} failed with exit code ${exitCode}: ${stderr.trim().split('\n')[0]?.slice(0, 300) || 'no output'}`,
    );
  }
}

/** The network handed to applyAllowlist is not the sandbox's own labeled network and bridge. */
export class SandboxNetworkMismatchError extends CaSandboxError {
  readonly code = 'SANDBOX_NETWORK_MISMATCH';
  readonly kind = 'failure';
}

/** A `--credential` that cannot be honoured: a bad header or value, a domain not allowed. */
export class InvalidCredentialError extends CaSandboxError {
  readonly code = 'INVALID_CREDENTIAL';
  readonly kind = 'usage';
}
