import { readFileSync, statSync } from 'node:fs';
import { docker, inspectImage } from '@ca-sandbox/docker';
import { z } from 'zod';
import { BaseImageMissingError, BuildConfigError } from './errors.js';
import { PROVIDERS, type Provider } from './provider.js';

/** The official images each provider builds on (seeded locally by scripts/seed-images.sh as ca-sbx-base:*). */
export const DEFAULT_BASE_IMAGES: Readonly<Record<Provider, string>> = {
  // Full images (not -slim) where the install compiles: node-gyp addons, C extensions, cgo.
  node: 'node:22-bookworm',
  python: 'python:3.11-bookworm',
  go: 'golang:1.27-bookworm',
  rust: 'rust:1-slim-bookworm',
  plain: 'debian:bookworm-slim',
};

// The name ends up in a Dockerfile FROM line and in argv: a strict reference grammar, no spaces.
export const ImageRefSchema = z
  .string()
  .max(255)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._/:-]*(@sha256:[a-f0-9]{64})?$/, 'not a valid image reference');

const ConfigSchema = z.object({
  baseImages: z.partialRecord(z.enum(PROVIDERS as [Provider, ...Provider[]]), ImageRefSchema).optional(),
});

export interface BaseImageChoice {
  image: string;
  source: 'option' | 'env' | 'config' | 'default';
}

export interface BaseImageInputs {
  baseImage?: string | undefined;
  baseImages?: Partial<Record<Provider, string>> | undefined;
  configFile?: string | undefined;
  env?: Record<string, string | undefined>;
}

/** Reads `baseImages` from the JSON config file (user-owned, still validated). */
export function readConfigBaseImages(path: string): Partial<Record<Provider, string>> {
  let text: string;
  try {
    if (statSync(path).size > 1024 * 1024)
      throw new BuildConfigError(`config file ${path} is larger than 1 MiB`);
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if (error instanceof BuildConfigError) throw error;
    throw new BuildConfigError(
      `cannot read config file ${path}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`,
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new BuildConfigError(`config file ${path} is not valid json`);
  }
  const parsed = ConfigSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new BuildConfigError(
      `config file ${path}: ${issue?.path.join('.') ?? ''} ${issue?.message.toLowerCase() ?? 'invalid'}`.trim(),
    );
  }
  return parsed.data.baseImages ?? {};
}

function checked(image: string, where: string): string {
  const parsed = ImageRefSchema.safeParse(image);
  if (!parsed.success)
    throw new BuildConfigError(
      `${where} ${JSON.stringify(image.slice(0, 100))} is not a valid image reference`,
    );
  return parsed.data;
}

/**
 * The base image of a provider: option `baseImage` (the `--base-image` flag) > option
 * `baseImages[provider]` > env CA_SANDBOX_BASE_IMAGE_<PROVIDER> > env CA_SANDBOX_BASE_IMAGE >
 * config file (option or env CA_SANDBOX_CONFIG, key `baseImages`) > the official default.
 */
export function resolveBaseImage(provider: Provider, inputs: BaseImageInputs = {}): BaseImageChoice {
  const env = inputs.env ?? process.env;
  if (inputs.baseImage) return { image: checked(inputs.baseImage, 'base image'), source: 'option' };
  const fromOption = inputs.baseImages?.[provider];
  if (fromOption) return { image: checked(fromOption, `base image for ${provider}`), source: 'option' };
  const specific = env[`CA_SANDBOX_BASE_IMAGE_${provider.toUpperCase()}`];
  if (specific)
    return { image: checked(specific, `CA_SANDBOX_BASE_IMAGE_${provider.toUpperCase()}`), source: 'env' };
  const all = env.CA_SANDBOX_BASE_IMAGE;
  if (all) return { image: checked(all, 'CA_SANDBOX_BASE_IMAGE'), source: 'env' };
  const configFile = inputs.configFile ?? env.CA_SANDBOX_CONFIG;
  if (configFile) {
    const fromConfig = readConfigBaseImages(configFile)[provider];
    if (fromConfig) return { image: fromConfig, source: 'config' };
  }
  return { image: DEFAULT_BASE_IMAGES[provider], source: 'default' };
}

/**
 * The image id of `image`, pulling it when it is not local. Neither local nor pullable ⇒
 * BaseImageMissingError (prerequisite) naming it and how to provide it.
 */
export async function ensureBaseImage(
  image: string,
  provider: Provider,
  signal?: AbortSignal,
): Promise<string> {
  const local = await inspectImage(image);
  if (local) return local.Id;
  const pulled = await docker(['pull', '--quiet', '--', image], {
    allowFailure: true,
    timeoutMs: 300_000,
    ...(signal ? { signal } : {}),
  });
  const after = pulled.exitCode === 0 ? await inspectImage(image) : undefined;
  if (!after) throw new BaseImageMissingError(image, provider);
  return after.Id;
}

const MAX_CA_BYTES = 4 * 1024 * 1024;
const MAX_CA_CERTS = 500;

/** Names the CA bundle of a TLS-intercepting proxy, for the install and the clone alike. */
export const CA_CERTS_ENV = 'CA_SANDBOX_CA_CERTS';

/** The bundle to trust: the option, else CA_SANDBOX_CA_CERTS; undefined when neither is set. */
export function resolveCaCertificates(
  option?: string,
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  return option || env[CA_CERTS_ENV] || undefined;
}

/**
 * The CERTIFICATE blocks of a PEM bundle named by the user (option or CA_SANDBOX_CA_CERTS), for
 * the install step behind a TLS-intercepting proxy. Only certificates are taken: a private key
 * in the same file never reaches an image.
 */
export function readExtraCa(path: string): Buffer {
  let text: string;
  try {
    if (statSync(path).size > MAX_CA_BYTES)
      throw new BuildConfigError(`ca certificates file ${path} is larger than 4 MiB`);
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if (error instanceof BuildConfigError) throw error;
    throw new BuildConfigError(
      `cannot read ca certificates file ${path}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`,
    );
  }
  const blocks =
    text.match(/-----BEGIN CERTIFICATE-----\r?\n[A-Za-z0-9+/=\r\n]+-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0)
    throw new BuildConfigError(`ca certificates file ${path} holds no pem certificate`);
  if (blocks.length > MAX_CA_CERTS)
    throw new BuildConfigError(`ca certificates file ${path} holds more than ${MAX_CA_CERTS} certificates`);
  return Buffer.from(`${blocks.map((block) => block.replace(/\r/g, '')).join('\n')}\n`, 'utf8');
}

/** `name:tag` as `docker image ls` shows it (docker.io/library/ prefixes dropped, `:latest` added). */
export function normaliseImageRef(ref: string): string | undefined {
  if (ref.includes('@')) return undefined;
  const name = ref.replace(/^docker\.io\/library\//, '').replace(/^docker\.io\//, '');
  return /:[^/]+$/.test(name) ? name : `${name}:latest`;
}

/**
 * Every local image's full id by `name:tag`, from one `docker image ls` (cheaper than one inspect
 * per candidate, and it runs while the manifests are read).
 */
export async function localImageIds(): Promise<Map<string, string>> {
  const { stdout } = await docker([
    'image',
    'ls',
    '--no-trunc',
    '--format',
    '{{.Repository}}:{{.Tag}}\t{{.ID}}',
  ]);
  const ids = new Map<string, string>();
  for (const line of stdout.split('\n')) {
    const [ref, id] = line.split('\t');
    if (ref && id && !ref.includes('<none>')) ids.set(ref, id.trim());
  }
  return ids;
}
