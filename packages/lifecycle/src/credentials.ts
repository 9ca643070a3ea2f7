import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import {
  type CredentialTarget,
  checkCredentialValue,
  credentialHeader,
  type GatewayCredential,
  InvalidCredentialError,
  MAX_CREDENTIAL_BYTES,
  parseEgressRule,
} from '@ca-sandbox/network';

/**
 * `--credential <domain>=<source>[,header=<name>]`: a value read on the host, handed to the box's
 * egress gateway only, which adds it to the box's HTTPS requests for that domain. Without a header,
 * `Authorization: Bearer <value>` (or a known API's own header, KNOWN_API_HEADERS); with one, the
 * header gets the value as it is (so `header=authorization` with a value `token abc` sends exactly
 * that).
 */
export interface CredentialSpec extends CredentialTarget {
  /** `env:NAME` (a variable of the calling process) or `file:/abs/path` (its first line). */
  source: string;
  /** `Bearer ` goes before the value (the default header). */
  bearer: boolean;
}

/**
 * APIs whose keys go in a header of their own: a credential for them without `header=` fills that
 * header with the value as is (Anthropic's API keys: `x-api-key`), not `Authorization: Bearer`.
 */
const KNOWN_API_HEADERS: Readonly<Record<string, string>> = {
  'api.anthropic.com': 'x-api-key',
};

export const CREDENTIAL_SYNTAX = '<domain>=env:<VAR>|file:<path>[,header=<name>]';

/**
 * Shows the domain part of a spec only: what follows `=` may be the value itself, typed there by
 * mistake (`api.example.com=sk-…`).
 */
function specError(text: string, why: string): InvalidCredentialError {
  const domain = text.split('=')[0] ?? '';
  const shown = domain.replace(/[^\x20-\x7e]/g, '?').slice(0, 80);
  return new InvalidCredentialError(
    `invalid --credential for '${shown}': ${why} (expected ${CREDENTIAL_SYNTAX})`,
  );
}

/**
 * Parses one spec. The source says what it is (`env:` or `file:`): a bare word could be the value
 * itself, which would then be shown as a variable's name and kept in the record. A relative path
 * is the caller's working directory's.
 */
export function parseCredentialSpec(text: string, cwd: string = process.cwd()): CredentialSpec {
  const equals = text.indexOf('=');
  if (equals <= 0) throw specError(text, 'no <domain>=');
  const domainText = text.slice(0, equals).trim();
  const [sourceText = '', ...options] = text.slice(equals + 1).split(',');
  let rule: ReturnType<typeof parseEgressRule>;
  try {
    rule = parseEgressRule(domainText);
  } catch {
    throw specError(text, 'the domain is not a host name');
  }
  if (rule.kind !== 'domain' || rule.subdomains || domainText.includes(':'))
    throw specError(text, 'a credential names one exact domain (no address, wildcard or port)');
  const known = KNOWN_API_HEADERS[rule.domain];
  let header = known ?? 'authorization';
  let bearer = known === undefined;
  for (const option of options) {
    const match = /^\s*header=(.+)$/.exec(option);
    if (!match?.[1]) throw specError(text, `unknown option '${option.trim().slice(0, 40)}'`);
    header = credentialHeader(match[1]);
    bearer = false;
  }
  return { domain: rule.domain, header, bearer, source: credentialSource(text, sourceText.trim(), cwd) };
}

function credentialSource(text: string, source: string, cwd: string): string {
  const kind = /^(env|file):/.exec(source)?.[1];
  if (!kind) throw specError(text, 'the source must start with env: or file:');
  const rest = source.slice(kind.length + 1);
  if (kind === 'env') {
    if (!/^[A-Za-z_][A-Za-z0-9_]{0,127}$/.test(rest)) throw specError(text, 'not a variable name');
    return `env:${rest}`;
  }
  if (!rest || rest.includes('\0')) throw specError(text, 'no file path');
  return `file:${isAbsolute(rest) ? rest : resolve(cwd, rest)}`;
}

/** What the record keeps of a spec (no value): domain, header, source, bearer. */
export function describeCredential(spec: CredentialSpec): string {
  return `${spec.domain} ${spec.header}${spec.bearer ? ' (bearer)' : ''} from ${spec.source}`;
}

/**
 * Reads a spec's value on the host (a variable of `env`, or a file's first line, at most
 * MAX_CREDENTIAL_BYTES), checked as squid takes it; errors name the source, never the value.
 */
export function readCredential(
  spec: CredentialSpec,
  env: NodeJS.ProcessEnv = process.env,
): GatewayCredential {
  const where = spec.source.replace(/^env:/, 'the variable ').replace(/^file:/, 'the file ');
  let raw: string | undefined;
  if (spec.source.startsWith('env:')) {
    raw = env[spec.source.slice('env:'.length)];
    if (raw === undefined)
      throw new InvalidCredentialError(`the credential for ${spec.domain}: ${where} is not set`);
  } else {
    raw = readSmallFile(spec.source.slice('file:'.length), spec.domain, where);
  }
  const value = (raw.split(/\r?\n/)[0] ?? '').trim();
  const full = spec.bearer ? `Bearer ${value}` : value;
  try {
    checkCredentialValue(spec.domain, value);
    checkCredentialValue(spec.domain, full);
  } catch (error) {
    throw new InvalidCredentialError(
      `the credential for ${spec.domain} from ${where}: ${(error as Error).message.replace(/^[^:]*: /, '')}`,
    );
  }
  return { domain: spec.domain, header: spec.header, value: full };
}

function readSmallFile(path: string, domain: string, where: string): string {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    const stat = fstatSync(fd);
    if (!stat.isFile())
      throw new InvalidCredentialError(`the credential for ${domain}: ${where} is not a regular file`);
    const buffer = Buffer.alloc(MAX_CREDENTIAL_BYTES + 2);
    const read = readSync(fd, buffer, 0, buffer.length, 0);
    return buffer.subarray(0, read).toString('utf8');
  } catch (error) {
    if (error instanceof InvalidCredentialError) throw error;
    throw new InvalidCredentialError(
      `the credential for ${domain}: cannot read ${where} (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
    );
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** The box label of its credentials: their targets and sources, never values (JSON). */
export const LABEL_CREDENTIALS = 'ca.sandbox.credentials';

/** The specs a box's label records (absent or unreadable: none). */
export function credentialsFromLabel(text: string | undefined): CredentialSpec[] {
  if (!text) return [];
  try {
    const parsed = JSON.parse(text) as unknown;
    if (!Array.isArray(parsed)) return [];
    return parsed.filter(
      (each): each is CredentialSpec =>
        typeof each?.domain === 'string' &&
        typeof each?.header === 'string' &&
        typeof each?.source === 'string' &&
        typeof each?.bearer === 'boolean',
    );
  } catch {
    return [];
  }
}

/**
 * What a `--with-claude` box gets instead of a key when its gateway adds one: Claude Code sees an
 * API key and sends it as `x-api-key`, which the gateway replaces with the real one. Not a secret.
 */
export const CLAUDE_KEY_PLACEHOLDER = 'ca-sandbox-placeholder-the-gateway-adds-the-real-key';

/** Whether a `--with-claude` box's gateway holds the Anthropic key (sent as `x-api-key`). */
export function gatewayHoldsClaudeKey(withClaude: boolean, specs: readonly CredentialSpec[]): boolean {
  return (
    withClaude && specs.some((spec) => spec.domain === 'api.anthropic.com' && spec.header === 'x-api-key')
  );
}

/** The box variables of a `--with-claude` box whose gateway holds the Anthropic key (none otherwise). */
export function claudeKeyEnv(withClaude: boolean, specs: readonly CredentialSpec[]): Record<string, string> {
  return gatewayHoldsClaudeKey(withClaude, specs) ? { ANTHROPIC_API_KEY: CLAUDE_KEY_PLACEHOLDER } : {};
}
