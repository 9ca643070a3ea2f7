import { realpath, stat } from 'node:fs/promises';
import { basename, resolve } from 'node:path';
import { GATEWAY_HOSTNAME, hasControlCharacter, sanitizeName } from '@ca-sandbox/docker/contracts';
import { isSandboxId } from '@ca-sandbox/docker/process';
import { InvalidOptionsError, InvalidSandboxIdError, InvalidSourceError } from './errors.js';

export type CloneScheme = 'https' | 'http' | 'git' | 'ssh';

/**
 * A source that passed validation; nothing has run yet. `identity` says which repository it is,
 * for the deps-image cache key: a URL without credentials (scheme and host lower-cased), or a local
 * directory's realpath. It is never shown (`display` is).
 */
export type ParsedSource =
  | {
      kind: 'url';
      url: string;
      scheme: CloneScheme;
      display: string;
      repoName: string;
      /** The server's host (no brackets) and explicit port: the clone's only egress destination. */
      host: string;
      port?: number;
      identity: string;
    }
  | { kind: 'local'; path: string; display: string; repoName: string; identity: string };

const ALLOWED_SCHEMES = new Set<string>(['https', 'http', 'git', 'ssh']);
// git's transport-helper syntax `<transport>::<address>` runs git-remote-<transport> (ext:: runs a shell).
const TRANSPORT_HELPER = /^[A-Za-z0-9+.-]*::/;
const URL_SCHEME = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//;
const SCP_LIKE = /^(?:([^@/:\s]+)@)?(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(.+)$/;
const HOST = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+)(?::([0-9]{1,5}))?$/;
const REF = /^[A-Za-z0-9_][A-Za-z0-9._/+-]{0,199}$/;
const COMMIT = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

/** Throws InvalidSandboxIdError unless `name` matches `[a-z0-9][a-z0-9_.-]{0,62}`. */
export function validateSandboxName(name: unknown): string {
  if (!isSandboxId(name)) throw new InvalidSandboxIdError(String(name));
  return name;
}

/**
 * Validates `--ref` (a branch, tag or full commit sha). Returns whether it names a commit, which
 * changes how the helper fetches it.
 */
export function parseRef(ref: string): { ref: string; commit: boolean } {
  if (
    !REF.test(ref) ||
    ref.includes('..') ||
    ref.includes('//') ||
    ref.endsWith('/') ||
    ref.endsWith('.lock')
  ) {
    throw new InvalidOptionsError(
      `invalid ref '${sanitizeName(ref, 80)}': give a branch, tag or full commit sha`,
    );
  }
  return { ref, commit: COMMIT.test(ref) };
}

/**
 * Classifies and validates a repo source without running anything: a git URL (https, http, git,
 * ssh, or scp-like user@host:path) or an existing local directory. Every form that could make
 * git run a command (options, transport helpers, file://, ssh hosts/users that are options,
 * control characters) throws InvalidSourceError.
 */
export async function parseSource(source: unknown): Promise<ParsedSource> {
  if (typeof source !== 'string' || source.length === 0) throw new InvalidSourceError('the source is empty');
  if (source.length > 4096) throw new InvalidSourceError('the source is longer than 4096 characters');
  if (hasControlCharacter(source)) throw new InvalidSourceError('control characters are not allowed');
  if (source.startsWith('-'))
    throw new InvalidSourceError(`'${sanitizeName(redactUserinfo(source), 80)}' looks like an option`);
  if (TRANSPORT_HELPER.test(source)) {
    throw new InvalidSourceError('git transport helpers (<name>::<address>, e.g. ext::) are refused');
  }
  const scheme = URL_SCHEME.exec(source)?.[1]?.toLowerCase();
  if (scheme !== undefined) return parseUrl(source, scheme);
  const local = await localDirectory(source);
  if (local) return local;
  if (/^(?:\/|\.{1,2}(?:\/|$)|~)/.test(source)) {
    throw new InvalidSourceError(
      `'${sanitizeName(redactUserinfo(source), 120)}' is not an existing directory`,
    );
  }
  const scp = SCP_LIKE.exec(source);
  if (scp) return parseScpLike(source, scp[1], scp[2] ?? '', scp[3] ?? '');
  throw new InvalidSourceError(
    `'${sanitizeName(redactUserinfo(source), 120)}' is not a git URL (https://, http://, git://, ssh://, user@host:path) or an existing directory`,
  );
}

function parseUrl(source: string, scheme: string): ParsedSource {
  if (scheme === 'file') {
    throw new InvalidSourceError('file:// URLs are refused; give the directory path instead');
  }
  if (!ALLOWED_SCHEMES.has(scheme)) {
    throw new InvalidSourceError(`the ${scheme}:// scheme is not allowed (use https, http, git or ssh)`);
  }
  if (/\s/.test(source)) throw new InvalidSourceError('whitespace is not allowed in a URL');
  const rest = source.slice(source.indexOf('://') + 3);
  const authority = rest.split(/[/?#]/, 1)[0] ?? '';
  const at = authority.lastIndexOf('@');
  const user = at >= 0 ? authority.slice(0, at) : undefined;
  const hostPort = at >= 0 ? authority.slice(at + 1) : authority;
  // git percent-decodes ssh URLs before handing host and user to ssh: check both spellings.
  for (const part of [user, hostPort]) {
    if (part === undefined) continue;
    const decoded = safeDecode(part);
    if (part.startsWith('-') || decoded.startsWith('-')) {
      throw new InvalidSourceError('a URL host or user must not begin with "-" (it would be an ssh option)');
    }
    if (hasControlCharacter(decoded)) throw new InvalidSourceError('control characters are not allowed');
  }
  if (user !== undefined && scheme === 'ssh' && /[%:]/.test(user)) {
    throw new InvalidSourceError('an ssh URL user must be a plain name');
  }
  if (!HOST.test(hostPort))
    throw new InvalidSourceError(`'${sanitizeName(hostPort, 80)}' is not a valid host`);
  let parsed: URL;
  try {
    parsed = new URL(source);
  } catch {
    throw new InvalidSourceError(`'${sanitizeName(redactUserinfo(source), 120)}' is not a valid URL`);
  }
  refuseLoopbackHost(parsed.hostname);
  return {
    kind: 'url',
    url: source,
    scheme: scheme as CloneScheme,
    display: redactUserinfo(source),
    repoName: repoNameOf(parsed.pathname),
    identity: urlIdentity({ url: source, scheme: scheme as CloneScheme }),
    host: parsed.hostname.replace(/^\[|\]$/g, ''),
    ...(parsed.port ? { port: Number(parsed.port) } : {}),
  };
}

const URL_USERINFO = /([A-Za-z][A-Za-z0-9+.-]*:\/\/)[^/?#\s]*@/g;
const SCP_USERINFO = /^[^@/:\s]+@(?=[^/:\s]+:)/;

/**
 * `text` with the userinfo (user AND password) of every URL in it replaced by `***`, and the user
 * of a leading scp-like `user@host:path`: a token can sit in either part (`https://ghp_x@github.com`),
 * and labels, list output and errors are readable by anyone who can run `docker ps`.
 */
export function redactUserinfo(text: string): string {
  return text.replace(URL_USERINFO, '$1***@').replace(SCP_USERINFO, '***@');
}

/**
 * The URL git should remember as `origin` in the box: http(s) and git URLs lose their userinfo (the
 * box must not read a token); ssh keeps its user (a login name, needed to fetch, never a secret).
 */
export function urlWithoutUserinfo(source: { url: string; scheme: CloneScheme }): string {
  if (source.scheme === 'ssh') return source.url;
  return source.url.replace(URL_USERINFO, '$1');
}

function parseScpLike(source: string, user: string | undefined, host: string, path: string): ParsedSource {
  if (user?.startsWith('-') || host.startsWith('-')) {
    throw new InvalidSourceError('an ssh host or user must not begin with "-" (it would be an ssh option)');
  }
  refuseLoopbackHost(host);
  return {
    kind: 'url',
    url: source,
    scheme: 'ssh',
    display: redactUserinfo(source),
    repoName: repoNameOf(path),
    identity: urlIdentity({ url: source, scheme: 'ssh' }),
    host: host.replace(/^\[|\]$/g, ''),
  };
}

async function localDirectory(source: string): Promise<ParsedSource | undefined> {
  const path = resolve(source);
  const info = await stat(path).catch(() => undefined);
  if (!info) return undefined;
  if (!info.isDirectory())
    throw new InvalidSourceError(`'${sanitizeName(redactUserinfo(source), 120)}' is not a directory`);
  // The realpath: two spellings (or symlinks) of one directory are one source, two directories
  // with the same name are two.
  const identity = await realpath(path).catch(() => path);
  return { kind: 'local', path, display: path, repoName: repoNameOf(path), identity };
}

/**
 * Which repository a URL names, for the cache key: credentials dropped (a token is not part of a
 * repo's identity, and the key is stored in a label), scheme and host lower-cased (DNS names are
 * case-blind). Nothing else is folded: two spellings of one repo at worst miss the cache, two
 * repos never share it. An ssh user stays: it is a login that can select another home directory.
 */
export function urlIdentity(source: { url: string; scheme: CloneScheme }): string {
  const clean = urlWithoutUserinfo(source);
  const scheme = URL_SCHEME.exec(clean);
  if (scheme) {
    const rest = clean.slice(scheme[0].length);
    const authorityEnd = rest.search(/[/?#]/);
    const authority = authorityEnd < 0 ? rest : rest.slice(0, authorityEnd);
    const at = authority.lastIndexOf('@');
    const host = authority.slice(at + 1).toLowerCase();
    return `${scheme[0].toLowerCase()}${authority.slice(0, at + 1)}${host}${rest.slice(authority.length)}`;
  }
  const scp = SCP_LIKE.exec(clean);
  if (!scp) return clean;
  return `${scp[1] === undefined ? '' : `${scp[1]}@`}${(scp[2] ?? '').toLowerCase()}:${scp[3] ?? ''}`;
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** A short label-safe name for the repo, from the last path segment without `.git`. */
export function repoNameOf(path: string): string {
  const last = basename(path.replace(/\/+$/, '')).replace(/\.git$/i, '');
  const clean = last
    .toLowerCase()
    .replace(/[^a-z0-9_.-]+/g, '-')
    .replace(/^[^a-z0-9]+/, '')
    .slice(0, 40)
    .replace(/[^a-z0-9]+$/, '');
  return clean || 'repo';
}

/** This machine's own addresses, as a client reads them: loopback, and "any" (which connects there). */
/**
 * Loopback and "any" (which connects there), as the WHATWG URL parser writes an address: IPv4 in
 * dotted decimal, IPv6 compressed and lower-case (IPv4-mapped and -compatible 127/8 and 0.0.0.0
 * in their hex form). No node:net here: only @ca-sandbox/docker opens a network API.
 */
const LOOPBACK_ADDRESS = /^(127\.\d+\.\d+\.\d+|0\.0\.0\.0|::1?|::(ffff:)?(7f[0-9a-f]{2}:[0-9a-f]{1,4}|0:0))$/;

/**
 * Names of ::1 that the engine writes into every container's /etc/hosts, the gateway's included
 * (squid reads it): like localhost, they name the gateway's own loopback there; and the gateway's
 * own hostname, which that file maps to the gateway itself.
 */
const LOOPBACK_NAMES = new Set(['localhost', 'ip6-localhost', 'ip6-loopback', GATEWAY_HOSTNAME]);

/**
 * A URL clone runs in a container: `localhost` there is the container itself, never this host
 * (which no clone reaches, by design). Without this, such a clone went to the egress gateway's
 * own loopback and failed as "the gateway could not connect to it". The host is read as the
 * http parser reads it (`127.1`, `0x7f.1` and `2130706433` are 127.0.0.1 to git's resolver too).
 */
function refuseLoopbackHost(host: string): void {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  const name = bare.replace(/\.$/, '');
  let address: string;
  try {
    address = new URL(`http://${bare.includes(':') ? `[${bare}]` : bare}/`).hostname.replace(/^\[|\]$/g, '');
  } catch {
    return;
  }
  const loopback = LOOPBACK_NAMES.has(name) || name.endsWith('.localhost') || LOOPBACK_ADDRESS.test(address);
  if (loopback)
    throw new InvalidSourceError(
      `the repo's host ${sanitizeName(bare, 80)} is a loopback address: the clone runs in a container, where it names the container itself, and never reaches this host; clone the repo on the host and give its directory`,
    );
}
