import { createHash } from 'node:crypto';
import { InvalidSandboxIdError } from './errors.js';

const SANDBOX_ID = /^[a-z0-9][a-z0-9_.-]{0,62}$/;

/** Throws InvalidSandboxIdError unless `id` is a well-formed sandbox id. */
export function assertSandboxId(id: unknown): asserts id is string {
  if (typeof id !== 'string' || !SANDBOX_ID.test(id)) {
    throw new InvalidSandboxIdError(
      `invalid sandbox id ${JSON.stringify(String(id)).slice(0, 80)}: expected [a-z0-9][a-z0-9_.-]{0,62}`,
    );
  }
}

/** The docker network of an allowlist sandbox: `ca-sbx-<id>`. */
export function sandboxNetworkName(sandboxId: string): string {
  assertSandboxId(sandboxId);
  return `ca-sbx-${sandboxId}`;
}

/** Bridge names look like this; anything else is not ours. */
export const BRIDGE_PATTERN = /^casbx[0-9a-f]{10}$/;

/**
 * The host bridge interface of the sandbox network. Linux caps interface names at 15 bytes and
 * ids are up to 63, so the name is a hash: stable per id (rules can be found again after a
 * restart) and unique in practice (40 bits).
 */
export function bridgeName(sandboxId: string): string {
  assertSandboxId(sandboxId);
  return `casbx${createHash('sha256').update(sandboxId).digest('hex').slice(0, 10)}`;
}

/** The comment every firewall rule of the sandbox carries. */
export function ruleTag(sandboxId: string): string {
  assertSandboxId(sandboxId);
  return `${RULE_TAG_PREFIX}${sandboxId}`;
}

export const RULE_TAG_PREFIX = 'ca-sandbox:';
