// Which engine ca-sandbox talks to, decided once, the way the docker CLI decides it, so that our
// Engine API client and every docker CLI process we still spawn reach the SAME engine:
//   1. DOCKER_HOST (with DOCKER_TLS_VERIFY / DOCKER_CERT_PATH for tcp),
//   2. DOCKER_CONTEXT,
//   3. `currentContext` of $DOCKER_CONFIG/config.json (default ~/.docker/config.json),
//   4. the default unix socket.
// A context lives in <config>/contexts/meta/<sha256(name)>/meta.json (Endpoints.docker.Host,
// SkipTLSVerify) with its TLS material in <config>/contexts/tls/<sha256(name)>/docker/*.pem.
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { DockerUnavailableError } from './errors.js';

export const DEFAULT_ENGINE_SOCKET = '/var/run/docker.sock';
const DEFAULT_CONTEXT = 'default';

export interface TlsMaterial {
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  /** False when the context or the environment asks to skip verifying the engine's certificate. */
  verify: boolean;
}

export type EngineTransport =
  | { kind: 'unix'; socketPath: string }
  | { kind: 'tcp'; host: string; port: number; tls?: TlsMaterial }
  | { kind: 'ssh'; host: string; user?: string; port?: number };

/** The resolved engine: how to reach it, where the choice came from, and what to tell the CLI. */
export interface EngineEndpoint {
  transport: EngineTransport;
  /** 'env' (DOCKER_HOST), 'context' (named context) or 'default' (the local socket). */
  source: 'env' | 'context' | 'default';
  /** The context name when `source` is 'context'. */
  context?: string;
  /** The address as docker writes it (`unix:///var/run/docker.sock`, `tcp://h:2376`, `ssh://u@h`). */
  host: string;
  /**
   * The variables every docker CLI process gets so that it resolves the same engine: the context
   * by name, or DOCKER_HOST (and the TLS variables that came with it).
   */
  cliEnv: Record<string, string>;
}

/** Reads a file, or undefined when it is not there (other errors too: a context we cannot read is absent). */
type ReadFile = (path: string) => Buffer | undefined;

const readIfThere: ReadFile = (path) => {
  try {
    return readFileSync(path);
  } catch {
    return undefined;
  }
};

/** An engine address that cannot be used: a prerequisite problem (exit 3), never a stack trace. */
function badEndpoint(detail: string): DockerUnavailableError {
  return new DockerUnavailableError(
    detail,
    'check DOCKER_HOST, DOCKER_CONTEXT and `docker context ls` (the current context must be reachable)',
  );
}

/** Parses `unix://path`, `tcp://host:port`, `ssh://[user@]host[:port]` (docker's DOCKER_HOST syntax). */
export function parseEngineHost(host: string, tls?: TlsMaterial): EngineTransport {
  if (host.startsWith('unix://')) {
    const socketPath = host.slice('unix://'.length);
    if (!socketPath.startsWith('/')) throw badEndpoint(`the engine socket must be an absolute path: ${host}`);
    return { kind: 'unix', socketPath };
  }
  if (host.startsWith('/')) return { kind: 'unix', socketPath: host };
  let url: URL;
  try {
    url = new URL(host);
  } catch {
    throw badEndpoint(`cannot read the engine address ${JSON.stringify(host)}`);
  }
  if (url.protocol === 'tcp:' || url.protocol === 'http:' || url.protocol === 'https:') {
    const hostname = url.hostname.replace(/^\[|\]$/g, '');
    if (!hostname) throw badEndpoint(`the engine address has no host: ${host}`);
    const port = url.port ? Number(url.port) : tls || url.protocol === 'https:' ? 2376 : 2375;
    return { kind: 'tcp', host: hostname, port, ...(tls ? { tls } : {}) };
  }
  if (url.protocol === 'ssh:') {
    if (!url.hostname) throw badEndpoint(`the engine address has no host: ${host}`);
    return {
      kind: 'ssh',
      host: url.hostname,
      ...(url.username ? { user: decodeURIComponent(url.username) } : {}),
      ...(url.port ? { port: Number(url.port) } : {}),
    };
  }
  throw badEndpoint(`unsupported engine address ${JSON.stringify(host)} (unix://, tcp:// or ssh://)`);
}

/** TLS from DOCKER_TLS_VERIFY / DOCKER_CERT_PATH (the CLI's defaults: ~/.docker when only verify is set). */
function envTls(env: NodeJS.ProcessEnv, configDir: string, read: ReadFile): TlsMaterial | undefined {
  const verify = env.DOCKER_TLS_VERIFY !== undefined && env.DOCKER_TLS_VERIFY !== '';
  if (!verify && !env.DOCKER_CERT_PATH) return undefined;
  const dir = env.DOCKER_CERT_PATH || configDir;
  return materialIn(dir, verify, read);
}

function materialIn(dir: string, verify: boolean, read: ReadFile): TlsMaterial {
  const material: TlsMaterial = { verify };
  const ca = read(join(dir, 'ca.pem'));
  const cert = read(join(dir, 'cert.pem'));
  const key = read(join(dir, 'key.pem'));
  if (ca) material.ca = ca;
  if (cert) material.cert = cert;
  if (key) material.key = key;
  return material;
}

/** The directory of docker's client configuration ($DOCKER_CONFIG, else ~/.docker). */
export function dockerConfigDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.DOCKER_CONFIG || join(env.HOME || homedir(), '.docker');
}

/** The hex sha256 of a context name: the directory docker stores the context under. */
function contextDigest(name: string): string {
  // node:crypto only when a context is named: the default path stays light.
  const { createHash } = process.getBuiltinModule('node:crypto') as typeof import('node:crypto');
  return createHash('sha256').update(name).digest('hex');
}

const ContextMetaShape = (json: unknown): { host: string; skipTlsVerify: boolean } | undefined => {
  const docker = (json as { Endpoints?: { docker?: { Host?: unknown; SkipTLSVerify?: unknown } } } | null)
    ?.Endpoints?.docker;
  if (!docker || typeof docker.Host !== 'string' || docker.Host === '') return undefined;
  return { host: docker.Host, skipTlsVerify: docker.SkipTLSVerify === true };
};

function contextEndpoint(name: string, configDir: string, read: ReadFile): EngineEndpoint {
  const digest = contextDigest(name);
  const raw = read(join(configDir, 'contexts', 'meta', digest, 'meta.json'));
  if (!raw) throw badEndpoint(`docker context ${JSON.stringify(name)} does not exist (in ${configDir})`);
  let meta: ReturnType<typeof ContextMetaShape>;
  try {
    meta = ContextMetaShape(JSON.parse(raw.toString('utf8')));
  } catch {
    meta = undefined;
  }
  if (!meta) throw badEndpoint(`docker context ${JSON.stringify(name)} has no docker endpoint`);
  const tlsDir = join(configDir, 'contexts', 'tls', digest, 'docker');
  const material = materialIn(tlsDir, !meta.skipTlsVerify, read);
  const hasTls = material.ca !== undefined || material.cert !== undefined || material.key !== undefined;
  const tls = hasTls || meta.host.startsWith('https://') ? material : undefined;
  return {
    transport: parseEngineHost(meta.host, tls),
    source: 'context',
    context: name,
    host: meta.host,
    cliEnv: { DOCKER_CONTEXT: name },
  };
}

function currentContext(configDir: string, read: ReadFile): string | undefined {
  const raw = read(join(configDir, 'config.json'));
  if (!raw) return undefined;
  try {
    const name = (JSON.parse(raw.toString('utf8')) as { currentContext?: unknown } | null)?.currentContext;
    return typeof name === 'string' && name !== '' ? name : undefined;
  } catch {
    return undefined; // the CLI warns and goes on with the default; so do we
  }
}

/**
 * The engine ca-sandbox uses, by the CLI's own order (see the top of this file). Throws
 * DockerUnavailableError when the chosen address cannot be used (a missing context, a bad host).
 */
export function resolveEndpoint(
  env: NodeJS.ProcessEnv = process.env,
  read: ReadFile = readIfThere,
): EngineEndpoint {
  const configDir = dockerConfigDir(env);
  const host = env.DOCKER_HOST;
  if (host) {
    const tls = host.startsWith('unix://') || host.startsWith('/') ? undefined : envTls(env, configDir, read);
    const cliEnv: Record<string, string> = { DOCKER_HOST: host };
    for (const key of ['DOCKER_TLS_VERIFY', 'DOCKER_CERT_PATH'] as const) {
      const value = env[key];
      if (value) cliEnv[key] = value;
    }
    return { transport: parseEngineHost(host, tls), source: 'env', host, cliEnv };
  }
  const name = env.DOCKER_CONTEXT || currentContext(configDir, read);
  if (name && name !== DEFAULT_CONTEXT) return contextEndpoint(name, configDir, read);
  const socket = `unix://${DEFAULT_ENGINE_SOCKET}`;
  return {
    transport: { kind: 'unix', socketPath: DEFAULT_ENGINE_SOCKET },
    source: 'default',
    host: socket,
    cliEnv: { DOCKER_HOST: socket },
  };
}

let cached: { key: string; endpoint: EngineEndpoint } | undefined;

/** resolveEndpoint() for this process, re-read when the variables it depends on change (tests do). */
export function engineEndpoint(): EngineEndpoint {
  const env = process.env;
  const key = [
    env.DOCKER_HOST,
    env.DOCKER_CONTEXT,
    env.DOCKER_CONFIG,
    env.HOME,
    env.DOCKER_TLS_VERIFY,
    env.DOCKER_CERT_PATH,
  ].join('\0');
  if (cached?.key !== key) cached = { key, endpoint: resolveEndpoint(env) };
  return cached.endpoint;
}
