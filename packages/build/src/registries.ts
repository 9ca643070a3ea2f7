import { DEFINITIONS } from '@ca-sandbox/config';
import { hasControlCharacter } from '@ca-sandbox/docker/contracts';
import { z } from 'zod';
import { InvalidBuildOptionsError } from './errors.js';
import type { Provider } from './provider.js';
import type { EnvEntry } from './recipe.js';

/**
 * Package mirrors every install uses (a corporate npm registry, PyPI index, Go proxy). One place
 * resolves them: the `registries` option of prepareImage (a config file loader feeds it) wins over
 * these environment variables.
 */
// The variables are the mirrors.* settings' (one home: @ca-sandbox/config, which also reads the
// configuration file and feeds the `registries` option).
export const REGISTRY_ENV = {
  npm: DEFINITIONS['mirrors.npmRegistry'].env[0] as 'CA_SANDBOX_NPM_REGISTRY',
  pip: DEFINITIONS['mirrors.pypiIndex'].env[0] as 'CA_SANDBOX_PIP_INDEX_URL',
  go: DEFINITIONS['mirrors.goProxy'].env[0] as 'CA_SANDBOX_GOPROXY',
} as const;

export type RegistryKind = keyof typeof REGISTRY_ENV;
export type Registries = Partial<Record<RegistryKind, string>>;

const MAX_URL = 2048;

function httpUrl(value: string): boolean {
  if (value.length > MAX_URL || hasControlCharacter(value) || /\s/.test(value)) return false;
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  } catch {
    return false;
  }
}

/** GOPROXY is a list: URLs separated by `,` or `|`, plus the keywords `direct` and `off`. */
function goProxyList(value: string): boolean {
  if (value.length > MAX_URL) return false;
  const parts = value.split(/[,|]/);
  return parts.length > 0 && parts.every((part) => part === 'direct' || part === 'off' || httpUrl(part));
}

const url = z.string().refine(httpUrl, 'must be an http(s) URL');
export const RegistriesSchema = z.strictObject({
  npm: url.optional(),
  pip: url.optional(),
  go: z
    .string()
    .refine(goProxyList, 'must be GOPROXY syntax: http(s) URLs, direct or off, joined by , or |')
    .optional(),
});

/** The option's values, else the environment's; a bad value is a usage error naming its source. */
export function resolveRegistries(
  option: Registries | undefined,
  env: NodeJS.ProcessEnv = process.env,
): Registries {
  const out: Registries = {};
  for (const kind of Object.keys(REGISTRY_ENV) as RegistryKind[]) {
    const fromOption = option?.[kind];
    const value = fromOption ?? env[REGISTRY_ENV[kind]]?.trim();
    if (!value) continue;
    const parsed = RegistriesSchema.shape[kind].safeParse(value);
    if (!parsed.success)
      throw new InvalidBuildOptionsError(
        `invalid ${fromOption ? `registries.${kind} option` : REGISTRY_ENV[kind]}: ${parsed.error.issues[0]?.message ?? 'invalid'}`,
      );
    out[kind] = value;
  }
  return out;
}

function hostOf(value: string): string {
  const parsed = new URL(value);
  return parsed.host;
}

/** The install step's variables for the provider's mirror (none configured ⇒ none). */
export function registryInstallEnv(provider: Provider, registries: Registries): EnvEntry[] {
  const env: EnvEntry[] = [];
  if (provider === 'node' && registries.npm) {
    // npm and pnpm read npm_config_registry, yarn classic YARN_REGISTRY, yarn berry YARN_NPM_REGISTRY_SERVER.
    env.push(
      { name: 'npm_config_registry', value: registries.npm },
      { name: 'YARN_REGISTRY', value: registries.npm },
      { name: 'YARN_NPM_REGISTRY_SERVER', value: registries.npm },
    );
  }
  if (provider === 'python' && registries.pip) {
    env.push(
      { name: 'PIP_INDEX_URL', value: registries.pip },
      { name: 'UV_DEFAULT_INDEX', value: registries.pip },
      { name: 'UV_INDEX_URL', value: registries.pip },
    );
    // pip ignores a plain-http index unless its host is trusted (a mirror inside the network).
    if (new URL(registries.pip).protocol === 'http:')
      env.push(
        { name: 'PIP_TRUSTED_HOST', value: hostOf(registries.pip) },
        { name: 'UV_INSECURE_HOST', value: hostOf(registries.pip) },
      );
  }
  if (provider === 'go' && registries.go) env.push({ name: 'GOPROXY', value: registries.go });
  return env;
}

/** Mirror URLs may carry credentials: they are masked in every log line we print or keep. */
export function registrySecrets(registries: Registries): string[] {
  const secrets: string[] = [];
  for (const value of Object.values(registries)) {
    for (const part of (value ?? '').split(/[,|]/)) {
      try {
        const parsed = new URL(part);
        if (parsed.username || parsed.password) secrets.push(part);
      } catch {
        // direct / off
      }
    }
  }
  return secrets;
}

/** Replaces the userinfo of each secret URL in a line by `***`. */
export function maskSecrets(line: string, secrets: readonly string[]): string {
  let out = line;
  for (const secret of secrets) {
    const parsed = new URL(secret);
    const masked = secret.replace(
      `${parsed.username}${parsed.password ? `:${parsed.password}` : ''}@`,
      '***@',
    );
    out = out.split(secret).join(masked);
  }
  return out;
}
