import { caCertificatesAdvice, type Registries, readExtraCa, resolveCaCertificates } from '@ca-sandbox/build';
import { INSTALL_REGISTRIES } from '@ca-sandbox/network';
import { type EgressGateway, probeUpstreamTrust } from '@ca-sandbox/run';
import type { CreateContext } from './context.js';

/**
 * The registry a provider's install fetches from first: its mirror setting, else the first of the
 * provider's registries (@ca-sandbox/network's list; yarn's registry.yarnpkg.com is the same
 * service as npm's). Only https ones: a certificate is what is checked. Undefined for a provider
 * without a registry.
 */
export function installRegistry(provider: string, mirrors: Registries): URL | undefined {
  const configured = { node: mirrors.npm, python: mirrors.pip, go: mirrors.go }[provider];
  // GOPROXY is a list (`,` or `|`, with `direct` and `off`): its first URL is fetched first.
  const first = configured?.split(/[,|]/).find((part) => /^https?:\/\//.test(part.trim()));
  const fallback = INSTALL_REGISTRIES[provider]?.[0];
  const text = configured !== undefined ? first : fallback && `https://${fallback}/`;
  if (!text) return undefined;
  try {
    const url = new URL(text.trim());
    return url.protocol === 'https:' ? url : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Said at once, beside the install, when its registry's certificate does not verify against what
 * the install trusts (the system's CAs and caCertificates): behind a TLS-intercepting proxy every
 * fetch then fails, and npm retries each for a minute or more, printing nothing, before it fails.
 */
export function untrustedRegistryNotice(host: string, reason: string, caFile: string | undefined): string {
  return `the install's registry ${host} presents a certificate the install does not trust (${reason}): a TLS-intercepting proxy? Its fetches will fail (npm retries for minutes first); ${caCertificatesAdvice(caFile)}`;
}

/**
 * One TLS handshake from the install's gateway to the provider's registry, beside the install; a
 * certificate signed by no CA the install trusts is said while the build still runs. Never fails
 * the create: a registry out of reach, a name the gateway pins (gatewayHosts: the probe would not
 * reach the pinned address) or a probe that cannot run says nothing.
 */
export async function checkRegistryTrust(
  ctx: CreateContext,
  gateway: EgressGateway,
  provider: string,
): Promise<void> {
  try {
    const registry = installRegistry(provider, ctx.options.mirrors);
    if (!registry) return;
    const host = registry.hostname.replace(/^\[|\]$/g, '');
    if (gateway.hostPins.some((pin) => pin.name.toLowerCase() === host.toLowerCase())) return;
    const caFile = resolveCaCertificates();
    const extraCa = caFile ? readExtraCa(caFile).toString('utf8') : '';
    const port = Number(registry.port || 443);
    const trust = await probeUpstreamTrust(gateway.container, host, port, extraCa, ctx.hooks.signal);
    if ('verified' in trust && !trust.verified && ctx.progress.running === 'build')
      ctx.progress.notice(untrustedRegistryNotice(registry.host, trust.reason, caFile));
  } catch {
    // The probe is advice: the install's own error says what failed.
  }
}
