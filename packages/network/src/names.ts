import { createHash } from 'node:crypto';
import { InvalidSandboxIdError, isSandboxId, sandboxNames } from '@ca-sandbox/docker';
import { InvariantError } from '@ca-sandbox/docker/contracts';

/** Throws InvalidSandboxIdError (the one of @ca-sandbox/docker) unless `id` is a well-formed sandbox id. */
export function assertSandboxId(id: unknown): asserts id is string {
  if (!isSandboxId(id)) throw new InvalidSandboxIdError(id);
}

/** The docker network of an allowlist sandbox: `ca-sbx-<id>`. */
export function sandboxNetworkName(sandboxId: string): string {
  assertSandboxId(sandboxId);
  return sandboxNames(sandboxId).network;
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

/**
 * The comment a firewall rule of the sandbox carries: `ca-sandbox:<id>`, and with `part`
 * `ca-sandbox:<id>#<part>`, unique per rule. Deletion relies on that: iptables-nft ignores IPv6
 * masks when it matches `-D`, so without a unique comment deleting one rule can delete another.
 */
export function ruleTag(sandboxId: string, part?: string): string {
  assertSandboxId(sandboxId);
  if (part !== undefined && !RULE_PART.test(part))
    throw new InvariantError(`invalid rule tag part ${JSON.stringify(part)}`);
  return `${RULE_TAG_PREFIX}${sandboxId}${part === undefined ? '' : `${RULE_PART_SEPARATOR}${part}`}`;
}

export const RULE_TAG_PREFIX = 'ca-sandbox:';
/** Not in the sandbox id alphabet, so `<id>#<part>` splits one way only. */
export const RULE_PART_SEPARATOR = '#';
const RULE_PART = /^[a-z][0-9]{1,4}$/;

/** The sandbox id and the rule part of a tag comment, or undefined when it is not ours. */
export function parseRuleTag(comment: string): { sandboxId: string; part?: string } | undefined {
  if (!comment.startsWith(RULE_TAG_PREFIX)) return undefined;
  const rest = comment.slice(RULE_TAG_PREFIX.length);
  const at = rest.indexOf(RULE_PART_SEPARATOR);
  const sandboxId = at === -1 ? rest : rest.slice(0, at);
  if (!isSandboxId(sandboxId)) return undefined;
  return at === -1 ? { sandboxId } : { sandboxId, part: rest.slice(at + 1) };
}
