import { readFileSync, statSync } from 'node:fs';
import {
  currentSettings,
  DEFAULT_BASE_IMAGES,
  ImageRefSchema,
  loadSettings,
  type SettingSource,
} from '@ca-sandbox/config';
import { DockerUnavailableError, engine, inspectImage } from '@ca-sandbox/docker';
import { BaseImageMissingError, BuildConfigError } from './errors.js';
import type { Provider } from './provider.js';

// One home for both (the settings package): re-exported for the build's callers.
export { DEFAULT_BASE_IMAGES, ImageRefSchema };

export interface BaseImageChoice {
  image: string;
  source: 'option' | Exclude<SettingSource, 'unset'>;
}

export interface BaseImageInputs {
  baseImage?: string | undefined;
  baseImages?: Partial<Record<Provider, string>> | undefined;
  /** Settings from this environment instead of the process's (tests). */
  env?: Record<string, string | undefined>;
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
 * `baseImages[provider]` > the `baseImages.<provider>` setting (env CA_SANDBOX_BASE_IMAGE_<PROVIDER>
 * > env CA_SANDBOX_BASE_IMAGE > the configuration file) > the official default.
 */
export function resolveBaseImage(provider: Provider, inputs: BaseImageInputs = {}): BaseImageChoice {
  if (inputs.baseImage) return { image: checked(inputs.baseImage, 'base image'), source: 'option' };
  const fromOption = inputs.baseImages?.[provider];
  if (fromOption) return { image: checked(fromOption, `base image for ${provider}`), source: 'option' };
  const settings = inputs.env ? loadSettings({ env: inputs.env }) : currentSettings();
  const setting = settings.get(`baseImages.${provider}`);
  if (setting.value === undefined || setting.source === 'unset')
    return { image: DEFAULT_BASE_IMAGES[provider], source: 'default' };
  return { image: setting.value, source: setting.source };
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
  const pulled = await engine.image
    .pull(image, { timeoutMs: 300_000, ...(signal ? { signal } : {}) })
    .then(() => true)
    .catch((error: unknown) => {
      if (error instanceof DockerUnavailableError) throw error;
      return false;
    });
  const after = pulled ? await inspectImage(image) : undefined;
  if (!after) throw new BaseImageMissingError(image, provider);
  return after.Id;
}

const MAX_CA_BYTES = 4 * 1024 * 1024;
const MAX_CA_CERTS = 500;

/**
 * The bundle to trust: the option, else the caCertificates setting (env CA_SANDBOX_CA_CERTS, then
 * the configuration file); undefined when none is set.
 */
export function resolveCaCertificates(
  option?: string,
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  if (option) return option;
  return (env === process.env ? currentSettings() : loadSettings({ env })).value('caCertificates');
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
