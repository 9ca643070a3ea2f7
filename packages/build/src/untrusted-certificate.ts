import { DEFINITIONS } from '@ca-sandbox/config';

// The setting's variable, from its one home (base-image.ts's CA_CERTS_ENV too: importing it here
// would make errors.ts, which uses this file, import itself through base-image.ts).
const CA_CERTS_ENV = DEFINITIONS.caCertificates.env[0] as string;

/**
 * A TLS certificate check that failed, as the installers word it: node's codes and text (npm,
 * pnpm, yarn: `SELF_SIGNED_CERT_IN_CHAIN`, `self-signed certificate in certificate chain`,
 * `unable to get local issuer certificate`), Python's (`CERTIFICATE_VERIFY_FAILED`), Go's
 * (`x509: certificate signed by unknown authority`), curl's and git's (`SSL certificate problem`).
 * Behind a TLS-intercepting proxy every registry fetch fails this way until the proxy's CA is
 * trusted, and npm retries each one for a minute or more before it says so.
 */
const UNTRUSTED_CERTIFICATE =
  /\b(SELF_SIGNED_CERT_IN_CHAIN|DEPTH_ZERO_SELF_SIGNED_CERT|UNABLE_TO_GET_ISSUER_CERT(?:_LOCALLY)?|UNABLE_TO_VERIFY_LEAF_SIGNATURE|CERT_UNTRUSTED|CERTIFICATE_VERIFY_FAILED)\b|self[- ]signed certificate in certificate chain|unable to get local issuer certificate|x509: certificate signed by unknown authority|SSL certificate problem/i;

/** Whether the install's output says a TLS certificate could not be verified. */
export function saysUntrustedCertificate(output: string): boolean {
  return UNTRUSTED_CERTIFICATE.test(output);
}

const CA_SETTING = 'caCertificates';

/**
 * What a failed install whose output says so adds to its message: the setting that makes the
 * install (and the box) trust a proxy's CA, or, when one is trusted already, that it may be the
 * wrong bundle. `caFile`: the bundle the install trusted (undefined: none).
 */
export function untrustedCertificateClause(caFile: string | undefined): string {
  return caFile
    ? `; it could not verify a TLS certificate although it trusts ${CA_SETTING} (${caFile}): that bundle may lack the CA that signed it (a TLS-intercepting proxy's)`
    : `; it could not verify a TLS certificate (a TLS-intercepting proxy?): name the proxy's CA bundle (PEM) as ${CA_SETTING} in the configuration file (ca-sandbox config path) or in ${CA_CERTS_ENV}: the clone and the install then trust it`;
}
