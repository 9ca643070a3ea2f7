import { createHash } from 'node:crypto';
import { readExtraCa } from './base-image.js';

/**
 * The CA bundle the user named (`CA_SANDBOX_CA_CERTS`, the caCertificates setting or option),
 * read once per create: its certificates and their digest. The digest keys the prep image, the
 * dephash and the deps image's LABEL_CA, so a changed bundle is a different image.
 */
export interface ExtraCa {
  pem: Buffer;
  /** sha256 (hex) of `pem`. */
  hash: string;
}

/** The CERTIFICATE blocks of the user's bundle, and their digest. */
export function loadExtraCa(path: string): ExtraCa {
  const pem = readExtraCa(path);
  return { pem, hash: createHash('sha256').update(pem).digest('hex') };
}

/**
 * Where the trusted bundles live in an image: root's, outside /deps (the install step and the box
 * run as 1000 and own /deps, so a file there could be replaced by the repo's install code; here
 * it cannot, and the box's root is read-only). Baked at build time, never mounted at run time.
 */
export const CA_TRUST_DIR = '/etc/ca-sandbox';
/** The user's certificates alone: what NODE_EXTRA_CA_CERTS adds to node's own store. */
export const EXTRA_CA_PATH = `${CA_TRUST_DIR}/extra-ca.pem`;
/**
 * The base image's system CAs followed by the user's: for the variables that REPLACE a tool's
 * default store (SSL_CERT_FILE, REQUESTS_CA_BUNDLE...), so public hosts the TLS proxy does not
 * intercept stay trusted.
 */
export const CA_BUNDLE_PATH = `${CA_TRUST_DIR}/ca-bundle.pem`;
/** The user's certificates' name in a build context. */
export const CONTEXT_EXTRA_CA = 'extra-ca.pem';

/** Label of a deps image built with the user's bundle: its sha256 (ExtraCa.hash). */
export const LABEL_CA = 'ca.sandbox.cache.ca';

/**
 * Where each tool reads the CAs it trusts. node adds NODE_EXTRA_CA_CERTS to its bundled store, so
 * it gets the user's certificates alone; every other variable replaces its tool's store and gets
 * the combined bundle: OpenSSL's default file (python's ssl, uv, Go's crypto/x509: SSL_CERT_FILE),
 * requests (certifi otherwise), pip, curl (Debian's is built with a fixed CA file: only
 * CURL_CA_BUNDLE moves it), git over https, cargo. One list for the install step and the box.
 */
export const CA_TRUST_ENV: Readonly<Record<string, string>> = {
  NODE_EXTRA_CA_CERTS: EXTRA_CA_PATH,
  SSL_CERT_FILE: CA_BUNDLE_PATH,
  REQUESTS_CA_BUNDLE: CA_BUNDLE_PATH,
  PIP_CERT: CA_BUNDLE_PATH,
  CURL_CA_BUNDLE: CA_BUNDLE_PATH,
  GIT_SSL_CAINFO: CA_BUNDLE_PATH,
  CARGO_HTTP_CAINFO: CA_BUNDLE_PATH,
};

/** The system stores of the bases we know (Debian/Alpine, Fedora/RHEL, macOS-like): the first found. */
const SYSTEM_BUNDLES = [
  '/etc/ssl/certs/ca-certificates.crt',
  '/etc/pki/tls/certs/ca-bundle.crt',
  '/etc/ssl/cert.pem',
];

/**
 * The root step that makes CA_BUNDLE_PATH from the base's system store and EXTRA_CA_PATH (copied
 * in just before, root's): both files end up root's, 0644, in a root-owned directory.
 */
export const CA_BUNDLE_SCRIPT = [
  `{ for f in ${SYSTEM_BUNDLES.join(' ')}; do if [ -f "$f" ]; then cat "$f"; echo; break; fi; done; cat ${EXTRA_CA_PATH}; } > ${CA_BUNDLE_PATH}`,
  `chown -R 0:0 ${CA_TRUST_DIR} && chmod 0755 ${CA_TRUST_DIR} && chmod 0644 ${EXTRA_CA_PATH} ${CA_BUNDLE_PATH}`,
].join(' && ');

/** The Dockerfile line that copies the user's certificates in (root's: COPY's default owner). */
export const CA_COPY_LINE = `COPY ${CONTEXT_EXTRA_CA} ${EXTRA_CA_PATH}`;

/**
 * A box whose gateway adds credentials trusts that gateway's CA as well (name-constrained to the
 * credential domains, made at each gateway start): the bundles then live on the box's tmpfs,
 * written by root at every box start (boxTrustScript), in a root-owned folder the box user cannot
 * change. The image's bundles stay as baked.
 */
export const BOX_TRUST_DIR = '/tmp/.ca-sandbox-trust';
const BOX_EXTRA_CA_PATH = `${BOX_TRUST_DIR}/extra-ca.pem`;
const BOX_CA_BUNDLE_PATH = `${BOX_TRUST_DIR}/ca-bundle.pem`;

/** CA_TRUST_ENV's variables, pointed at the box's own bundles (BOX_TRUST_DIR). */
export const BOX_TRUST_ENV: Readonly<Record<string, string>> = Object.fromEntries(
  Object.entries(CA_TRUST_ENV).map(([name, path]) => [
    name,
    path === EXTRA_CA_PATH ? BOX_EXTRA_CA_PATH : BOX_CA_BUNDLE_PATH,
  ]),
);

/**
 * The root command that writes the box's bundles from the gateway's CA (its stdin): the image's
 * baked bundles (or the system store, for an image without the user's CAs) followed by it.
 */
export const BOX_TRUST_SCRIPT = [
  `umask 022; mkdir -p ${BOX_TRUST_DIR} && cat > ${BOX_TRUST_DIR}/gateway-ca.pem`,
  `{ if [ -f ${EXTRA_CA_PATH} ]; then cat ${EXTRA_CA_PATH}; echo; fi; cat ${BOX_TRUST_DIR}/gateway-ca.pem; } > ${BOX_EXTRA_CA_PATH}`,
  `{ if [ -f ${CA_BUNDLE_PATH} ]; then cat ${CA_BUNDLE_PATH}; else for f in ${SYSTEM_BUNDLES.join(' ')}; do if [ -f "$f" ]; then cat "$f"; break; fi; done; fi; echo; cat ${BOX_TRUST_DIR}/gateway-ca.pem; } > ${BOX_CA_BUNDLE_PATH}`,
].join(' && ');
