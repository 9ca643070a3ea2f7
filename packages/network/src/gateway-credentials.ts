import { quoteForMessage } from './_utils.js';
import { formatCidr, parseCidr } from './cidr.js';
import { type EgressRule, parseEgressRule } from './egress-rules.js';
import { InvalidAllowEntryError, InvalidCredentialError } from './errors.js';

/**
 * Credentials the gateway adds to a box's requests, so that the value never enters the box. For a
 * listed domain the gateway terminates the box's TLS (a certificate of a per-sandbox CA made in
 * the gateway, see CREDENTIAL_CERTS_SCRIPT), replaces the header with the value and sends the
 * request on over its own TLS to the real host. Every other allowed domain is tunnelled as before.
 */

/** What the box's record and `verify` know of a credential: where it goes, never its value. */
export interface CredentialTarget {
  /** An exact host name (no wildcard) that one of the box's allow rules covers. */
  domain: string;
  /** The request header it fills, lower case (`authorization`, `x-api-key`). */
  header: string;
}

/** A credential as the gateway gets it: the header's whole value (`Bearer <token>` included). */
export interface GatewayCredential extends CredentialTarget {
  value: string;
}

/** The gateway's own folder on its tmpfs: the certificates, the credentials, the upstream CAs. */
export const GATEWAY_SECRETS_DIR = '/tmp/gw';
/** The CA certificate the box trusts for the credential domains (its key is gone once the leaf is signed). */
export const GATEWAY_CA_PATH = `${GATEWAY_SECRETS_DIR}/ca.pem`;
/** The squid lines that add the values: written by an exec's stdin, never by a variable or a mount. */
export const CREDENTIALS_CONF_PATH = `${GATEWAY_SECRETS_DIR}/credentials.conf`;
/** The CAs the gateway trusts when it connects on to a credential domain: the system's and the user's. */
export const UPSTREAM_CA_PATH = `${GATEWAY_SECRETS_DIR}/upstream.pem`;
const LEAF_CERT_PATH = `${GATEWAY_SECRETS_DIR}/leaf.pem`;
const LEAF_KEY_PATH = `${GATEWAY_SECRETS_DIR}/leaf.key`;
/** The variable that names the credential domains (space-separated) for the certificate script. */
export const CREDENTIAL_DOMAINS_ENV = 'CA_SANDBOX_CREDENTIAL_DOMAINS';

/**
 * Headers a credential may not fill: the ones that frame or route the request (the gateway and
 * the API would disagree on what was sent, or where), hop-by-hop ones, and the proxy's own.
 */
const RESERVED_HEADERS = new Set([
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'te',
  'trailer',
  'upgrade',
  'expect',
  'proxy-authorization',
  'proxy-authenticate',
  'proxy-connection',
  'via',
  'forwarded',
  'x-forwarded-for',
  'cache-control',
]);
const HEADER_NAME = /^[a-z0-9][a-z0-9-]{0,63}$/;
/**
 * Longest credential value taken (an API key, a JWT), as written into squid's configuration (`%`
 * doubled): squid reads a configuration line in chunks of 8191 bytes and, past one, fails with the
 * line (the value) in its error; well under that.
 */
export const MAX_CREDENTIAL_BYTES = 4096;

function credentialError(what: string, why: string): InvalidCredentialError {
  return new InvalidCredentialError(`invalid credential ${quoteForMessage(what)}: ${why}`);
}

/** A header name a credential may fill, lower-cased; InvalidCredentialError otherwise. */
export function credentialHeader(name: string): string {
  const header = name.trim().toLowerCase();
  if (!HEADER_NAME.test(header)) throw credentialError(name, 'a header name is letters, digits and -');
  if (RESERVED_HEADERS.has(header) || header.startsWith('proxy-'))
    throw credentialError(
      name,
      `the ${header} header frames or routes the request: it cannot carry a credential`,
    );
  return header;
}

/**
 * Checks a credential's value (as read on the host) for what squid's quoted string takes: printable
 * ASCII and spaces, no `"` or `\`, no `${` (squid replaces `${service_name}` and its like in any
 * value, with no escape), not blank, at most MAX_CREDENTIAL_BYTES once `%` is doubled. The error
 * never shows the value.
 */
export function checkCredentialValue(domain: string, value: string): void {
  if (value.trim() === '') throw credentialError(domain, 'its value is empty');
  if (Buffer.byteLength(value.replaceAll('%', '%%')) > MAX_CREDENTIAL_BYTES)
    throw credentialError(
      domain,
      `its value is longer than ${MAX_CREDENTIAL_BYTES} bytes (a % counts twice)`,
    );
  if (!/^[\x20-\x7e]+$/.test(value) || /["\\]/.test(value) || value.includes('${'))
    throw credentialError(
      domain,
      'its value must be printable ASCII without " or \\ or ${ (the value itself is not shown)',
    );
}

/**
 * Checks that each target's domain is an exact name one of `rules` allows (a wildcard rule covers
 * its subdomains), with at most one credential per domain and header.
 */
export function checkCredentialTargets(
  targets: readonly CredentialTarget[],
  rules: readonly EgressRule[],
): void {
  const seen = new Set<string>();
  for (const target of targets) {
    const key = `${target.domain} ${target.header}`;
    if (seen.has(key))
      throw credentialError(target.domain, `a second credential for its ${target.header} header`);
    seen.add(key);
    const covered = rules.some(
      (rule) =>
        rule.kind === 'domain' &&
        (rule.domain === target.domain || (rule.subdomains && target.domain.endsWith(`.${rule.domain}`))),
    );
    if (!covered)
      throw credentialError(
        target.domain,
        'its domain is not on the allowlist: add --allow for it (a credential never goes anywhere the box may not reach)',
      );
  }
}

/**
 * The squid lines that decide where a credential goes, without any value (part of the rendered
 * configuration that `verify` compares): bump the box's TLS to the credential domains only, strip
 * the box's own header there, mark what got one in the log, refuse TRACE (an API that echoes the
 * request would hand the value back) and squid's cache manager (it shows the configuration), and
 * include the values' file.
 *
 * A request is given a value by its own host (the URL squid builds from the request line or the
 * Host header), never by the tunnel it came through: one inside the API's tunnel that names
 * another host is a request to that host, allowed or refused by the list like any other, and gets
 * no value. A plain `GET https://<domain>/` sent to the proxy gets the value too (squid then speaks
 * verified TLS to the domain); only its hop from the box to the gateway, on the box's internal
 * network, is in clear.
 */
export function credentialConfigLines(targets: readonly CredentialTarget[]): {
  port: string;
  early: string[];
  /** Before every allow. */
  refusals: string[];
  /** After everything: the values' file. */
  last: string[];
} {
  const domains = [...new Set(targets.map((target) => target.domain))];
  const early = [
    // squid's cache manager reports its configuration, the included values with it: never served.
    'cachemgr_passwd disable all',
    `tls_outgoing_options cafile=${UPSTREAM_CA_PATH}`,
    // squid names itself in these answer headers (its host name and port): not the box's business.
    'reply_header_access X-Cache deny all',
    'reply_header_access X-Cache-Lookup deny all',
    `acl credential_names dstdomain -n ${domains.join(' ')}`,
    'acl credential_https proto HTTPS',
    'acl credential_trace method TRACE',
    'ssl_bump bump credential_names',
    'ssl_bump splice all',
    // What squid cannot parse in a tunnel to a credential domain is passed on as is, never given a
    // value: plain HTTP through CONNECT (undici sends http:// URLs so) goes to the host unchanged,
    // and bytes that are not HTTP after the box's TLS go to the host's port in clear.
    'on_unsupported_protocol tunnel all',
  ];
  targets.forEach((target, index) => {
    early.push(
      `acl credential${index} dstdomain -n ${target.domain}`,
      `request_header_access ${target.header} deny credential${index}`,
      `note credential ${target.domain} credential${index} credential_https !credential_trace`,
    );
  });
  return {
    port: `ssl-bump tls-cert=${LEAF_CERT_PATH} tls-key=${LEAF_KEY_PATH} generate-host-certificates=off`,
    early,
    refusals: ['http_access deny manager', 'http_access deny credential_names credential_trace'],
    last: [`include ${CREDENTIALS_CONF_PATH}`],
  };
}

/**
 * The values' file (CREDENTIALS_CONF_PATH): one `request_header_add` per credential, on HTTPS
 * requests to its domain only (never plain HTTP, never TRACE). `%` is squid's format escape.
 */
export function renderCredentialSecrets(credentials: readonly GatewayCredential[]): string {
  return credentials
    .map((credential, index) => {
      checkCredentialValue(credential.domain, credential.value);
      const value = credential.value.replaceAll('%', '%%');
      return `request_header_add ${credential.header} "${value}" credential${index} credential_https !credential_trace\n`;
    })
    .join('');
}

/**
 * The gateway's start-up step before squid, when it carries credentials: a fresh CA (P-256,
 * name-constrained to the credential domains, 30 days) and one leaf certificate for all of them,
 * signed, then the CA key deleted: nothing, the gateway included, can sign another name with it.
 * An empty values' file (the create writes it by exec) and the upstream CAs (the system's store;
 * the create appends the user's). Everything is on the gateway's tmpfs, mode 600 but the CA cert.
 */
export const CREDENTIAL_CERTS_SCRIPT = [
  `umask 077; mkdir -p ${GATEWAY_SECRETS_DIR} && cd ${GATEWAY_SECRETS_DIR} || exit 1`,
  `set -- $${CREDENTIAL_DOMAINS_ENV}; [ $# -gt 0 ] || { echo 'ca-sandbox: no credential domain' >&2; exit 1; }`,
  'san=""; permitted=""; for d in "$@"; do san="$san${san:+,}DNS:$d"; permitted="$permitted${permitted:+,}permitted;DNS:$d"; done',
  'ec="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"',
  'openssl req -x509 $ec -keyout ca.key -out ca.pem -days 30 -subj "/CN=ca-sandbox gateway" -addext "basicConstraints=critical,CA:TRUE,pathlen:0" -addext "keyUsage=critical,keyCertSign,cRLSign" -addext "nameConstraints=critical,$permitted" 2>/dev/null || { echo "ca-sandbox: the gateway could not make its CA" >&2; exit 1; }',
  `openssl req -new $ec -keyout ${LEAF_KEY_PATH} -out leaf.csr -subj "/CN=$1" 2>/dev/null || exit 1`,
  'printf "subjectAltName=%s\\nbasicConstraints=critical,CA:FALSE\\nkeyUsage=critical,digitalSignature\\nextendedKeyUsage=serverAuth\\n" "$san" > leaf.ext',
  `openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -set_serial "0x$(od -An -tx1 -N16 /dev/urandom | tr -d ' \\n')" -days 30 -extfile leaf.ext -out ${LEAF_CERT_PATH} 2>/dev/null || { echo "ca-sandbox: the gateway could not sign its certificate" >&2; exit 1; }`,
  'rm -f ca.key leaf.csr leaf.ext; chmod 644 ca.pem',
  `: > ${CREDENTIALS_CONF_PATH}`,
  `cat /etc/ssl/certs/ca-certificates.crt > ${UPSTREAM_CA_PATH} 2>/dev/null || : > ${UPSTREAM_CA_PATH}`,
  'cd /tmp',
].join('\n');

/** One name the gateway resolves to a fixed address (setting gatewayHosts), `name=address`. */
export interface GatewayHostPin {
  name: string;
  address: string;
}

/** The gateway's hosts file, read by squid before DNS (GATEWAY_HOSTS_PATH). */
export const GATEWAY_HOSTS_PATH = '/tmp/gw-hosts';
/** The variable that carries it into the gateway (rewritten at every start, like the config). */
export const GATEWAY_HOSTS_ENV = 'CA_SANDBOX_HOSTS_FILE';

/**
 * Parses `name=address` pins (setting gatewayHosts): an exact domain and one address. A pinned
 * address is still refused when it is in a blocked range: a pin names where a name is, it opens
 * nothing.
 */
export function parseGatewayHostPins(entries: readonly string[]): GatewayHostPin[] {
  return entries.map((entry) => {
    const [name = '', address = '', extra] = entry.trim().split('=');
    const rule = extra === undefined && name && !name.includes(':') ? parseEgressRule(name) : undefined;
    const cidr = address.includes('/') ? undefined : parseCidr(address.trim());
    if (rule?.kind !== 'domain' || rule.subdomains || !cidr)
      throw new InvalidAllowEntryError(
        entry,
        `invalid gateway host ${quoteForMessage(entry)}: expected name=address, e.g. api.internal.example=203.0.113.7`,
      );
    return { name: rule.domain, address: formatCidr(cidr).replace(/\/(32|128)$/, '') };
  });
}

/** The hosts file's text: `address name` per pin. */
export function renderGatewayHosts(pins: readonly GatewayHostPin[]): string {
  return pins.map((pin) => `${pin.address} ${pin.name}\n`).join('');
}
