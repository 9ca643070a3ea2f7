import { CA_CERTS_ENV, readExtraCa, resolveCaCertificates } from '@ca-sandbox/build';
import { currentSettings } from '@ca-sandbox/config';
import { type EgressGateway, probeUpstreamTrust } from '@ca-sandbox/run';
import type { CreateContext } from './context.js';

/**
 * The registry a provider's install fetches from first: its mirror setting, else the public one
 * (yarn's registry.yarnpkg.com is the same service as npm's). Only https ones: a certificate is what
 * is checked. Undefined for a provider without a registry of its own.
 */
export function installRegistry(provider: string, mirrors: Partial<Record<string, string>>): URL | undefined {
  const configured = { node: mirrors.npm, python: mirrors.pip, go: mirrors.go }[provider];
  const fallback = PUBLIC_REGISTRIES[provider];
  // GOPROXY is a list (`,` or `|`, with `direct` and `off`): its first URL is fetched first.
  const first = configured?.split(/[,|]/).find((part) => /^https?:\/\//.test(part.trim()));
  const text = configured !== undefined ? first : fallback;
  if (!text) return undefined;
  try {
    const url = new URL(text.trim());
    return url.protocol === 'https:' ? url : undefined;
  } catch {
    return undefined;
  }
}

const PUBLIC_REGISTRIES: Readonly<Record<string, string>> = {
  node: 'https://registry.npmjs.org/',
  python: 'https://pypi.org/simple/',
  go: 'https://proxy.golang.org/',
};

/**
 * Said at once, beside the install, when its registry's certificate does not verify against what
 * the install trusts (the system's CAs and caCertificates): behind a TLS-intercepting proxy every
 * fetch then fails, and npm retries each for a minute or more, printing nothing, before it fails.
 */
export function untrustedRegistryNotice(host: string, reason: string, caFile: string | undefined): string {
  const fix = caFile
    ? `the bundle of caCertificates (${caFile}) may lack the CA that signed it`
    : `name the proxy's CA bundle (PEM) as caCertificates in the configuration file (ca-sandbox config path) or in ${CA_CERTS_ENV}`;
  return `the install's registry ${host} presents a certificate the install does not trust (${reason}): a TLS-intercepting proxy? Its fetches will fail (npm retries for minutes first); ${fix}`;
}

/**
 * One TLS handshake from the install's gateway to the provider's registry, beside the install; a
 * certificate the install would refuse is said while the build still runs. Never fails the create:
 * a registry out of reach or a probe that cannot run says nothing.
 */
export async function checkRegistryTrust(
  ctx: CreateContext,
  gateway: EgressGateway,
  provider: string,
): Promise<void> {
  try {
    const settings = currentSettings();
    const registry = installRegistry(provider, {
      npm: settings.value('mirrors.npmRegistry'),
      pip: settings.value('mirrors.pypiIndex'),
      go: settings.value('mirrors.goProxy'),
    });
    if (!registry) return;
    const caFile = resolveCaCertificates();
    const extraCa = caFile ? readExtraCa(caFile).toString('utf8') : '';
    const host = registry.hostname.replace(/^\[|\]$/g, '');
    const port = Number(registry.port || 443);
    const trust = await probeUpstreamTrust(gateway.container, host, port, extraCa, ctx.hooks.signal);
    if ('verified' in trust && !trust.verified && ctx.progress.running === 'build')
      ctx.progress.notice(untrustedRegistryNotice(registry.host, trust.reason, caFile));
  } catch {
    // The probe is advice: the install's own error says what failed.
  }
}
