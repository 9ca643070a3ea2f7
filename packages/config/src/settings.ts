import { readFileSync, statSync } from 'node:fs';
import { delimiter, isAbsolute, resolve } from 'node:path';
import { DEFAULT_DEPS_VIEW, DEPS_VIEWS } from '@ca-sandbox/docker/contracts';
import { z } from 'zod';
import { ConfigError } from './errors.js';
import { type ConfigLocation, configLocation, dataDir, type PlatformContext } from './paths.js';

/** The build providers, each with its own base image (the build package detects them). */
export const PROVIDERS = ['node', 'python', 'go', 'rust', 'plain'] as const;
export type Provider = (typeof PROVIDERS)[number];

/**
 * The local base image scripts/seed-images.sh builds for each provider it covers (there is no
 * registry on machines like CI's); scripts/write-config.mjs names them in the configuration file.
 * A provider missing here (rust) has no local stand-in: its hints must not send users to the script.
 */
export const SEEDED_BASE_IMAGES: Partial<Record<Provider, string>> = {
  node: 'ca-sbx-base:node',
  python: 'ca-sbx-base:python',
  go: 'ca-sbx-base:go',
  plain: 'ca-sbx-base:debian',
};

// An image name ends up in a Dockerfile FROM line and in argv: a strict reference grammar, no spaces.
export const ImageRefSchema = z
  .string()
  .max(255)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._/:-]*(@sha256:[a-f0-9]{64})?$/, 'not a valid image reference');

const AbsolutePath = z
  .string()
  .min(1)
  .max(4096)
  .refine((value) => isAbsolute(value) && !value.includes('\0'), 'expected an absolute path');
const HttpUrl = z
  .url({ protocol: /^https?$/, error: 'expected an http(s) url' })
  .max(2048)
  .refine((value) => !/\s/.test(value), 'expected an http(s) url');
// GOPROXY's own list syntax: urls, `direct` or `off`, separated by `,` or `|`.
const GoProxyList = z
  .string()
  .max(2048)
  .regex(/^[A-Za-z0-9:/._~%@+=?&-]+([,|][A-Za-z0-9:/._~%@+=?&-]+)*$/, 'expected a GOPROXY list');
// Shape only: the build checks the value by docker's own rules (@ca-sandbox/docker parseSize).
const DockerSize = z
  .string()
  .max(32)
  .regex(/^[0-9]+(\.[0-9]+)?\s?[a-zA-Z]{0,3}$/, 'expected a docker size such as 2g or 512m');

/** Official images each provider builds on (stood in for locally by ca-sbx-base:*, see setup). */
export const DEFAULT_BASE_IMAGES: Readonly<Record<Provider, string>> = {
  // Full images (not -slim) where the install compiles: node-gyp addons, C extensions, cgo.
  node: 'node:22-bookworm',
  python: 'python:3.11-bookworm',
  go: 'golang:1.27-bookworm',
  rust: 'rust:1-slim-bookworm',
  plain: 'debian:bookworm-slim',
};
export const DEFAULT_HELPER_IMAGE = 'ca-sbx-base:git';
/** The local image with Debian's squid that every egress gateway runs (scripts/seed-images.sh). */
export const DEFAULT_GATEWAY_IMAGE = 'ca-sbx-base:gateway';
/** Limits of each dependency build container (see @ca-sandbox/build's README). */
export const BUILD_DEFAULTS = {
  timeoutSeconds: 15 * 60,
  memory: '2g',
  cpus: 2,
  processes: 4096,
  fileSizeBytes: 4 * 1024 ** 3,
  maxDepsSize: '4g',
} as const;

/**
 * The image cache's default bound: a share of the disk that holds Docker's images, so that a day
 * of trials never fills the disk Docker needs for everything else on the machine.
 */
export const CACHE_MAX_SIZE_DEFAULT = '25%';
// A docker size, a share of Docker's disk (`25%`), or `off` (no bound).
const CacheSize = z.union([
  DockerSize,
  z.string().regex(/^(100|[1-9][0-9]?)%$/, 'expected a docker size such as 20g, a share such as 25%, or off'),
  z.literal('off'),
]);

interface Definition<S extends z.ZodType> {
  schema: S;
  /** Variables that set it, the first one set wins. */
  env: readonly string[];
  /** Turns an env string into what the schema takes (numbers, lists, relative paths). */
  fromEnv?: (raw: string) => unknown;
  fallback?: (platform: Partial<PlatformContext>) => z.output<S>;
  describe: string;
}

const define = <S extends z.ZodType>(definition: Definition<S>): Definition<S> => definition;
const number = (raw: string): unknown => (/^[0-9]+(\.[0-9]+)?$/.test(raw.trim()) ? Number(raw) : raw);
const path = (raw: string): unknown => resolve(raw);

function baseImage(provider: Provider) {
  return define({
    schema: ImageRefSchema,
    env: [`CA_SANDBOX_BASE_IMAGE_${provider.toUpperCase()}`, 'CA_SANDBOX_BASE_IMAGE'],
    fallback: () => DEFAULT_BASE_IMAGES[provider],
    describe: `base image of ${provider} repositories`,
  });
}

/**
 * Every setting, keyed as in the file (`build.memory` is `{"build":{"memory":...}}`). One home:
 * the packages read them through `loadSettings`, never their variables directly.
 */
export const DEFINITIONS = {
  'baseImages.node': baseImage('node'),
  'baseImages.python': baseImage('python'),
  'baseImages.go': baseImage('go'),
  'baseImages.rust': baseImage('rust'),
  'baseImages.plain': baseImage('plain'),
  helperImage: define({
    schema: ImageRefSchema,
    env: ['CA_SANDBOX_HELPER_IMAGE'],
    fallback: () => DEFAULT_HELPER_IMAGE,
    describe: 'image of the clone helper (needs git and tar)',
  }),
  gatewayImage: define({
    schema: ImageRefSchema,
    env: ['CA_SANDBOX_GATEWAY_IMAGE'],
    fallback: () => DEFAULT_GATEWAY_IMAGE,
    describe: 'image of the egress gateway (needs squid)',
  }),
  gatewayHosts: define({
    // Shape only: each entry is checked (a domain, one address) where the gateway starts.
    schema: z.array(z.string().min(3).max(300)).max(256),
    env: ['CA_SANDBOX_GATEWAY_HOSTS'],
    fromEnv: (raw) =>
      raw
        .split(',')
        .map((entry) => entry.trim())
        .filter(Boolean),
    describe:
      'names the egress gateway resolves to a fixed address, name=address (an internal API your DNS does not know); blocked ranges stay blocked',
  }),
  'claude.keySource': define({
    schema: z
      .string()
      .max(4096)
      .regex(
        /^(env:[A-Za-z_][A-Za-z0-9_]{0,127}|file:\/\S.*)$/,
        'expected env:<VAR> or file:/<absolute path>',
      ),
    env: ['CA_SANDBOX_CLAUDE_KEY_SOURCE'],
    describe:
      'where --with-claude reads the Anthropic API key its gateway adds (env:ANTHROPIC_API_KEY, file:/path): the box never holds it; unset, the key is typed into claude in the box',
  }),
  'install.allow': define({
    // Shape only: each entry is checked as an egress destination (--allow syntax) by the create.
    schema: z.array(z.string().min(1).max(300)).max(256),
    env: ['CA_SANDBOX_INSTALL_ALLOW'],
    fromEnv: (raw) =>
      raw
        .split(',')
        .map((entry) => entry.trim())
        .filter(Boolean),
    describe: 'extra destinations the dependency install may reach (--allow syntax: a private registry)',
  }),
  caCertificates: define({
    schema: AbsolutePath,
    env: ['CA_SANDBOX_CA_CERTS'],
    fromEnv: path,
    describe: 'PEM bundle the clone, the install and an allowlist box trust (TLS-intercepting proxy)',
  }),
  'mirrors.npmRegistry': define({
    schema: HttpUrl,
    env: ['CA_SANDBOX_NPM_REGISTRY'],
    describe: 'npm registry the install uses instead of registry.npmjs.org',
  }),
  'mirrors.pypiIndex': define({
    schema: HttpUrl,
    env: ['CA_SANDBOX_PIP_INDEX_URL'],
    describe: 'PyPI index url the install uses instead of pypi.org',
  }),
  'mirrors.goProxy': define({
    schema: GoProxyList,
    env: ['CA_SANDBOX_GOPROXY'],
    describe: 'GOPROXY the install uses instead of proxy.golang.org',
  }),
  'build.timeoutSeconds': define({
    schema: z.number().int().min(1).max(86_400),
    env: ['CA_SANDBOX_BUILD_TIMEOUT'],
    fromEnv: number,
    fallback: () => BUILD_DEFAULTS.timeoutSeconds,
    describe: 'wall-clock limit of a dependency build, seconds',
  }),
  'build.memory': define({
    schema: DockerSize,
    env: ['CA_SANDBOX_BUILD_MEMORY'],
    fallback: () => BUILD_DEFAULTS.memory,
    describe: 'memory of a build container (no swap on top)',
  }),
  'build.cpus': define({
    schema: z.number().min(0.01).max(1024),
    env: ['CA_SANDBOX_BUILD_CPUS'],
    fromEnv: number,
    fallback: () => BUILD_DEFAULTS.cpus,
    describe: 'cpus of a build container',
  }),
  'build.processes': define({
    schema: z.number().int().min(16).max(4_194_304),
    env: ['CA_SANDBOX_BUILD_PROCESSES'],
    fromEnv: number,
    fallback: () => BUILD_DEFAULTS.processes,
    describe: 'process limit of the install user in a build',
  }),
  'build.fileSizeBytes': define({
    schema: z
      .number()
      .int()
      .min(1024 ** 2)
      .max(2 ** 53 - 1),
    env: ['CA_SANDBOX_BUILD_FILE_SIZE'],
    fromEnv: number,
    fallback: () => BUILD_DEFAULTS.fileSizeBytes,
    describe: 'largest file an install may write, bytes',
  }),
  'build.maxDepsSize': define({
    schema: DockerSize,
    env: ['CA_SANDBOX_MAX_DEPS_SIZE'],
    fallback: () => BUILD_DEFAULTS.maxDepsSize,
    describe: 'most the install may add to the base image (a docker size, at least 1m)',
  }),
  'cache.maxSize': define({
    schema: CacheSize,
    env: ['CA_SANDBOX_CACHE_MAX_SIZE'],
    fallback: () => CACHE_MAX_SIZE_DEFAULT,
    describe:
      "most the ca-sbx:* image cache may hold: a docker size (20g), a share of Docker's disk (25%), or off; the least recently used images go after a create that built one",
  }),
  'deps.view': define({
    schema: z.enum(DEPS_VIEWS),
    env: ['CA_SANDBOX_DEPS_VIEW'],
    fallback: () => DEFAULT_DEPS_VIEW,
    describe:
      'how a node box sees its installed deps: overlay (node_modules are real folders under /work/repo, an overlay of the install over the checkout, as after npm install on your machine) or links (node_modules entries link into the image; what gVisor boxes get)',
  }),
  'mcp.roots': define({
    schema: z.array(AbsolutePath).max(64),
    env: ['CA_SANDBOX_MCP_ROOTS'],
    fromEnv: (raw) =>
      raw
        .split(delimiter)
        .filter(Boolean)
        .map((each) => resolve(each)),
    fallback: () => [],
    describe: 'host directories the MCP server may read local sources from (besides the client roots)',
  }),
  'mcp.outputRoot': define({
    schema: AbsolutePath,
    env: ['CA_SANDBOX_MCP_OUTPUT_ROOT'],
    fromEnv: path,
    fallback: (platform) => `${dataDir(platform)}/output`,
    describe: 'the only host directory the MCP server writes copies into',
  }),
} as const;

export type SettingKey = keyof typeof DEFINITIONS;
export type SettingValue<K extends SettingKey> = z.output<(typeof DEFINITIONS)[K]['schema']>;
export type SettingSource = 'flag' | 'env' | 'file' | 'default' | 'unset';
export const SETTING_KEYS = Object.keys(DEFINITIONS) as SettingKey[];

export interface Setting<K extends SettingKey = SettingKey> {
  key: K;
  value: SettingValue<K> | undefined;
  source: SettingSource;
  /** The variable, file or flag it came from. */
  from?: string;
  describe: string;
}

export interface Settings {
  file: ConfigLocation & { exists: boolean };
  get<K extends SettingKey>(key: K): Setting<K>;
  /** The effective value (undefined when unset and without default). */
  value<K extends SettingKey>(key: K): SettingValue<K> | undefined;
  all(): Setting[];
}

/** The file's schema, nested as the dotted keys say; unknown keys are refused (typos surface). */
function fileSchema(): z.ZodType {
  const groups = new Map<string, Record<string, z.ZodType>>();
  const top: Record<string, z.ZodType> = { $schema: z.string().optional() };
  for (const [key, definition] of Object.entries(DEFINITIONS)) {
    const [group, name] = key.split('.') as [string, string | undefined];
    if (name === undefined) top[group] = definition.schema.optional();
    else groups.set(group, { ...groups.get(group), [name]: definition.schema.optional() });
  }
  for (const [group, shape] of groups) top[group] = z.strictObject(shape).optional();
  return z.strictObject(top);
}

const MAX_FILE_BYTES = 1024 * 1024;

function issueKey(issue: z.core.$ZodIssue): string {
  const parts = issue.path.map(String);
  if (issue.code === 'unrecognized_keys') parts.push(issue.keys[0] ?? '');
  return parts.join('.') || '(top level)';
}

/** Reads and validates the file; undefined when the default location has no file. */
export function readConfigFile(location: ConfigLocation): Record<string, unknown> | undefined {
  let text: string;
  try {
    if (statSync(location.path).size > MAX_FILE_BYTES)
      throw new ConfigError(`config file ${location.path} is larger than 1 MiB`, location.path);
    text = readFileSync(location.path, 'utf8');
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' && location.source === 'default') return undefined;
    throw new ConfigError(
      `cannot read config file ${location.path} (named by CA_SANDBOX_CONFIG): ${code ?? 'error'}`,
      location.path,
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new ConfigError(`config file ${location.path} is not valid json`, location.path);
  }
  const parsed = fileSchema().safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const key = issue ? issueKey(issue) : '(top level)';
    const message =
      issue?.code === 'unrecognized_keys' ? 'unknown setting' : (issue?.message ?? 'invalid').toLowerCase();
    throw new ConfigError(`config file ${location.path}: ${key}: ${message}`, location.path, key);
  }
  return parsed.data as Record<string, unknown>;
}

function fromFile(file: Record<string, unknown> | undefined, key: string): unknown {
  let node: unknown = file;
  for (const part of key.split('.')) node = (node as Record<string, unknown> | undefined)?.[part];
  return node;
}

export interface LoadOptions extends Partial<PlatformContext> {
  /** Values given as flags of the running command (already typed), with the flag's name. */
  flags?: { [K in SettingKey]?: { value: SettingValue<K>; flag: string } };
}

/**
 * Every setting from the file, then the environment, then flags (each later one wins), validated.
 * A bad file or variable is a ConfigError naming it and the key.
 */
export function loadSettings(options: LoadOptions = {}): Settings {
  const env = options.env ?? process.env;
  const location = configLocation(options);
  const file = readConfigFile(location);
  const resolved = new Map<SettingKey, Setting>();
  for (const key of SETTING_KEYS) {
    const definition: Definition<z.ZodType> = DEFINITIONS[key];
    const flag = options.flags?.[key];
    let setting: Setting = { key, value: undefined, source: 'unset', describe: definition.describe };
    const fileValue = fromFile(file, key);
    if (fileValue !== undefined)
      setting = { ...setting, value: fileValue as never, source: 'file', from: location.path };
    const variable = definition.env.find((name) => env[name]?.trim());
    if (variable) {
      const raw = (env[variable] ?? '').trim();
      const parsed = definition.schema.safeParse(definition.fromEnv ? definition.fromEnv(raw) : raw);
      if (!parsed.success)
        throw new ConfigError(
          `${variable}: ${(parsed.error.issues[0]?.message ?? 'invalid').toLowerCase()}`,
          variable,
          key,
        );
      setting = { ...setting, value: parsed.data as never, source: 'env', from: variable };
    }
    if (flag) setting = { ...setting, value: flag.value as never, source: 'flag', from: flag.flag };
    if (setting.source === 'unset' && definition.fallback)
      setting = { ...setting, value: definition.fallback(options) as never, source: 'default' };
    resolved.set(key, setting);
  }
  return {
    file: { ...location, exists: file !== undefined },
    get: <K extends SettingKey>(key: K) => resolved.get(key) as Setting<K>,
    value: <K extends SettingKey>(key: K) => resolved.get(key)?.value as SettingValue<K> | undefined,
    all: () => [...resolved.values()],
  };
}

let cached: { key: string; settings: Settings } | undefined;

/**
 * The settings of this process, loaded once (again only when a CA_SANDBOX_*, HOME or XDG
 * variable changed, as tests do). Library code calls this; explicit options still win.
 */
export function currentSettings(env: Record<string, string | undefined> = process.env): Settings {
  const key = JSON.stringify(
    Object.entries(env)
      .filter(([name]) => name.startsWith('CA_SANDBOX_') || name.startsWith('XDG_') || name === 'HOME')
      .sort(([a], [b]) => a.localeCompare(b)),
  );
  if (cached?.key !== key || env !== process.env) {
    const settings = loadSettings({ env });
    if (env !== process.env) return settings;
    cached = { key, settings };
  }
  return cached.settings;
}
