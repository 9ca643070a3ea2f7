import { DEFINITIONS } from '@ca-sandbox/config';

/** The caCertificates setting's variable (base-image.ts and the lifecycle import it from here). */
export const CA_CERTS_ENV = DEFINITIONS.caCertificates.env[0] as string;

/**
 * A TLS certificate check that failed, as the installers word it: node's codes and text (npm,
 * pnpm, yarn: `SELF_SIGNED_CERT_IN_CHAIN`, `self-signed certificate in certificate chain`,
 * `unable to get local issuer certificate`), Python's (`CERTIFICATE_VERIFY_FAILED`), Go's
 * (`x509: certificate signed by unknown authority`), and curl's and git's, which quote OpenSSL's words.
 * Only an unknown signer: an expired certificate or a wrong name is no matter of a missing CA.
 * Behind a TLS-intercepting proxy every registry fetch fails this way until the proxy's CA is
 * trusted, and npm retries each one for a minute or more before it says so.
 */
const UNTRUSTED_CERTIFICATE =
  /\b(SELF_SIGNED_CERT_IN_CHAIN|DEPTH_ZERO_SELF_SIGNED_CERT|UNABLE_TO_GET_ISSUER_CERT(?:_LOCALLY)?|UNABLE_TO_VERIFY_LEAF_SIGNATURE|CERT_UNTRUSTED)\b|self[- ]signed certificate|unable to get (?:local )?issuer certificate|unable to verify the first certificate|x509: certificate signed by unknown authority/i;

/** Whether the install's output says a TLS certificate could not be verified. */
export function saysUntrustedCertificate(output: string): boolean {
  return UNTRUSTED_CERTIFICATE.test(output);
}

const CA_SETTING: keyof typeof DEFINITIONS = 'caCertificates';

/**
 * What a failed install whose output says so adds to its message: the setting that makes the
 * install (and the box) trust a proxy's CA, or, when one is trusted already, that it may be the
 * wrong bundle. `caFile`: the bundle the install trusted (undefined: none).
 */
export function untrustedCertificateClause(caFile: string | undefined): string {
  return caFile
    ? `; it could not verify a TLS certificate although it trusts ${CA_SETTING} (${caFile}): ${caCertificatesAdvice(caFile)}`
    : `; it could not verify a TLS certificate (a TLS-intercepting proxy?): ${caCertificatesAdvice(undefined)}`;
}

/**
 * What to do about a certificate the install does not trust (the failed install's clause, and the
 * create's warning before it): name the proxy's CA, or, with one named, that it may be the wrong one.
 */
export function caCertificatesAdvice(caFile: string | undefined): string {
  return caFile
    ? `the bundle of ${CA_SETTING} (${caFile}) may lack the CA that signed it (a TLS-intercepting proxy's)`
    : `name the proxy's CA bundle (PEM) as ${CA_SETTING} in the configuration file (ca-sandbox config path) or in ${CA_CERTS_ENV}: the clone and the install then trust it`;
}
