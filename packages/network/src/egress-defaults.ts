import { type EgressRule, parseEgressRule, parseEgressRules } from './egress-rules.js';

/**
 * The registries an install of each provider reaches by default: the npm registry (and yarn's
 * mirror of it and yarn berry's plugin host), PyPI's index and files, the Go module proxy and
 * checksum database, crates.io's index and downloads.
 */
export const INSTALL_REGISTRIES: Readonly<Record<string, readonly string[]>> = {
  node: ['registry.npmjs.org', 'registry.yarnpkg.com', 'repo.yarnpkg.com'],
  python: ['pypi.org', 'files.pythonhosted.org'],
  go: ['proxy.golang.org', 'sum.golang.org'],
  rust: ['crates.io', 'index.crates.io', 'static.crates.io'],
  plain: [],
};

/**
 * What the user configured for installs (settings of @ca-sandbox/config, resolved by the caller:
 * this package reads no setting itself): mirror URLs (npm registry, PyPI index, a GOPROXY list)
 * and extra destinations in `--allow` syntax (a private registry, say).
 */
export interface InstallDestinations {
  mirrors?: readonly string[];
  extra?: readonly string[];
}

/** `host:port` of each http(s) URL in the mirror values (GOPROXY lists split; `off`, `direct` name no host). */
function mirrorDestinations(mirrors: readonly string[]): string[] {
  const out: string[] = [];
  for (const mirror of mirrors) {
    for (const value of mirror.split(/[,|]/)) {
      try {
        const url = new URL(value.trim());
        if (url.protocol === 'https:' || url.protocol === 'http:') {
          const port = url.port || (url.protocol === 'https:' ? '443' : '80');
          const host = url.hostname.replace(/^\[|\]$/g, '');
          out.push(host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`);
        }
      } catch {
        // not a URL (`off`, `direct`): no host to open
      }
    }
  }
  return out;
}

/** What the install of `provider` may reach: its registries, the configured mirrors and extras. */
export function installEgressRules(provider: string, configured: InstallDestinations = {}): EgressRule[] {
  return [...parseEgressRules(INSTALL_REGISTRIES[provider] ?? []), ...configuredInstallRules(configured)];
}

/** The Claude Code image's build (`--with-claude`): the npm registry, configured mirrors and extras. */
export function claudeInstallEgressRules(configured: InstallDestinations = {}): EgressRule[] {
  return [...parseEgressRules(['registry.npmjs.org']), ...configuredInstallRules(configured)];
}

/**
 * Mirrors and extras are the user's own (a corporate registry on the LAN is the usual case):
 * allowed wherever they resolve, like the repo's host.
 */
function configuredInstallRules(configured: InstallDestinations): EgressRule[] {
  const extra = (configured.extra ?? []).map((entry) => entry.trim()).filter(Boolean);
  return parseEgressRules([...mirrorDestinations(configured.mirrors ?? []), ...extra]).map((rule) =>
    rule.kind === 'domain' ? { ...rule, resolvesAnywhere: true } : rule,
  );
}

/**
 * The only destination of a `--with-claude` box: the Anthropic API, HTTPS only. Nothing else (no
 * telemetry host, no update server): a box that holds a key reaches its API and nothing more.
 */
export const CLAUDE_API_DESTINATION = 'api.anthropic.com:443';

const SCHEME_PORTS: Readonly<Record<string, number>> = { https: 443, http: 80, git: 9418, ssh: 22 };

/**
 * The clone reaches the repo's host only, on the URL's port (or the scheme's). The user named that
 * host, so it is allowed wherever it resolves (an internal git server included).
 */
export function cloneEgressRule(source: { host: string; port?: number; scheme: string }): EgressRule {
  const port = source.port ?? SCHEME_PORTS[source.scheme] ?? 443;
  const host = source.host.includes(':') ? `[${source.host}]` : source.host;
  const rule = parseEgressRule(`${host}:${port}`);
  return rule.kind === 'domain' ? { ...rule, resolvesAnywhere: true } : rule;
}
