import { describe, expect, it } from 'vitest';
import { ImageBuildError, ImageBuildTimeoutError } from './errors.js';
import { saysUntrustedCertificate, untrustedCertificateClause } from './untrusted-certificate.js';

describe('saysUntrustedCertificate', () => {
  it.each([
    // npm 10 behind an intercepting proxy, and against a self-signed registry
    'npm error code SELF_SIGNED_CERT_IN_CHAIN',
    'npm error code DEPTH_ZERO_SELF_SIGNED_CERT',
    'npm error request to https://registry.npmjs.org/express failed, reason: self-signed certificate in certificate chain',
    // pnpm's retry warning and yarn classic's error
    ' WARN  GET https://registry.npmjs.org/ms error (UNABLE_TO_GET_ISSUER_CERT_LOCALLY). Will retry in 10 seconds. 2 retries left.',
    'error Error: unable to get local issuer certificate',
    // pip, go, git
    "WARNING: Retrying (Retry(total=4)) after connection broken by 'SSLError(SSLCertVerificationError(1, '[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed certificate in certificate chain (_ssl.c:1006)'))'",
    'go: golang.org/x/text@v0.3.0: Get "https://proxy.golang.org/...": tls: failed to verify certificate: x509: certificate signed by unknown authority',
    "fatal: unable to access 'https://example.test/r.git/': SSL certificate problem: self-signed certificate",
  ])('%s', (line) => {
    expect(saysUntrustedCertificate(`added 3 packages\n${line}\n`)).toBe(true);
  });

  it.each([
    'npm error code E404',
    'npm error code ETIMEDOUT',
    'ERR_PNPM_FETCH_404  GET https://registry.npmjs.org/x: Not Found - 404',
    'certificate.pem written',
    // An expired certificate or a wrong name is no missing CA.
    'npm error code CERT_HAS_EXPIRED',
    "fatal: unable to access 'https://example.test/r.git/': SSL certificate problem: certificate has expired",
    'npm error code ERR_TLS_CERT_ALTNAME_INVALID',
  ])('not: %s', (line) => {
    expect(saysUntrustedCertificate(line)).toBe(false);
  });
});

describe('the failed install names the setting', () => {
  const output = 'npm error code SELF_SIGNED_CERT_IN_CHAIN\nnpm error errno SELF_SIGNED_CERT_IN_CHAIN';

  it('no bundle trusted: caCertificates and its variable', () => {
    const error = new ImageBuildError('ca-sbx:x', 1, output, '2g', { trust: { caFile: undefined } });
    expect(error.message).toContain('exited 1');
    expect(error.message).toContain(untrustedCertificateClause(undefined));
    expect(error.message).toMatch(/caCertificates in the configuration file .* or in CA_SANDBOX_CA_CERTS/);
    expect(error.message).not.toContain('\n');
  });

  it('a bundle trusted: that bundle may lack the signing CA', () => {
    const error = new ImageBuildError('ca-sbx:x', 1, output, '2g', {
      trust: { caFile: '/etc/proxy-ca.pem' },
    });
    expect(error.message).toContain('although it trusts caCertificates (/etc/proxy-ca.pem)');
  });

  it('a timeout whose output says so: the same clause', () => {
    const error = new ImageBuildTimeoutError('ca-sbx:x', 60_000, output, { trust: { caFile: undefined } });
    expect(error.message).toContain('could not verify a TLS certificate');
  });

  it('an unrelated failure, or a build of ours (no trust given): nothing added', () => {
    expect(
      new ImageBuildError('ca-sbx:x', 1, 'npm error code E404', '2g', { trust: { caFile: undefined } })
        .message,
    ).not.toContain('TLS');
    expect(new ImageBuildError('ca-sbx:x', 1, output, '2g', {}).message).not.toContain('TLS');
  });
});
