// Our Engine API client: node:http over the resolved endpoint (unix socket, tcp, tcp+TLS, ssh via
// `docker system dial-stdio`). Kept small and dependency-free on purpose: `ca-sandbox exec` loads
// it on its measured hot path (see docs/architecture.md for why not dockerode / docker-modem).
import { spawn } from 'node:child_process';
import type { ClientRequest, IncomingMessage, RequestOptions } from 'node:http';
import { Duplex } from 'node:stream';
import { type EngineEndpoint, type EngineTransport, engineEndpoint } from './endpoint.js';
import { DockerEngineError, DockerNotFoundError, DockerUnavailableError } from './errors.js';
import { tracerFor } from './exec-docker.js';

// node:http and node:https as CommonJS modules, not through `import`: the ESM facade of node:http
// reads every export, and its lazy WebSocket/MessageEvent getters then load undici and compile its
// llhttp (about 50 ms of every command's start-up, for classes we never use).
const { request: httpRequest } = process.getBuiltinModule('node:http');

export interface EngineRequestOptions {
  /** JSON body (sent with Content-Type: application/json). */
  body?: unknown;
  /** Raw body (a tar stream for an import, say) with its content type. */
  raw?: { data: Buffer | NodeJS.ReadableStream; contentType: string };
  timeoutMs?: number;
  /** The docker verb this call stands for, in messages: `container inspect`, `exec start`. */
  verb: string;
  signal?: AbortSignal;
}

export interface EngineResponse {
  status: number;
  body: Buffer;
  /** The answer's headers, names in lower case. */
  headers?: IncomingMessage['headers'];
}

const DEFAULT_TIMEOUT_MS = 60_000;
/** Transport failures that mean "no engine there", not "the engine refused". */
const UNREACHABLE_CODES = new Set([
  'ENOENT',
  'ECONNREFUSED',
  'ECONNRESET',
  'EACCES',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
  'ENOTSOCK',
  'ENOTDIR',
  'ERR_SSH_DIAL',
  'ERR_ENGINE_TIMEOUT',
]);

/** A connection error as our error: the daemon does not answer (exit 3), or the error itself. */
export function transportError(error: unknown, endpoint: EngineEndpoint, verb: string): Error {
  const code = (error as { code?: unknown }).code;
  const tlsCode =
    typeof code === 'string' && /^(ERR_TLS|ERR_SSL|CERT_|UNABLE_TO|DEPTH_ZERO|SELF_SIGNED)/.test(code);
  if ((typeof code === 'string' && UNREACHABLE_CODES.has(code)) || tlsCode) {
    const detail = (error as Error).message?.split('\n')[0] ?? String(code);
    return new DockerUnavailableError(
      `the daemon does not answer at ${endpoint.host} (docker ${verb}: ${detail})`,
    );
  }
  return error instanceof Error ? error : new Error(String(error));
}

/** The engine's own message from an error body (`{"message": "..."}`), else the text. */
function engineMessage(body: Buffer): string {
  const text = body.toString('utf8');
  try {
    const message = (JSON.parse(text) as { message?: unknown } | null)?.message;
    if (typeof message === 'string') return message;
  } catch {
    // not JSON: the text itself
  }
  return text.trim().slice(0, 500);
}

/** A non-2xx answer as a typed error: 404 → DockerNotFoundError, else DockerEngineError. */
export function statusError(verb: string, status: number, body: Buffer): DockerEngineError {
  const message = engineMessage(body);
  return status === 404
    ? new DockerNotFoundError(verb, message)
    : new DockerEngineError(verb, status, message);
}

/** The stdio of `ssh [-p port] [user@]host -- docker system dial-stdio` as one duplex stream. */
function sshConnection(transport: Extract<EngineTransport, { kind: 'ssh' }>): Duplex {
  const target = transport.user ? `${transport.user}@${transport.host}` : transport.host;
  const argv = [
    ...(transport.port ? ['-p', String(transport.port)] : []),
    '-o',
    'ConnectTimeout=30',
    '-T',
    '--',
    target,
    'docker',
    'system',
    'dial-stdio',
  ];
  const env: Record<string, string> = {};
  for (const key of ['PATH', 'HOME', 'USER', 'SSH_AUTH_SOCK', 'SSH_AGENT_PID']) {
    const value = process.env[key];
    if (value !== undefined) env[key] = value;
  }
  const child = spawn('ssh', argv, { stdio: ['pipe', 'pipe', 'pipe'], env });
  let stderr = '';
  let received = false;
  let timer: NodeJS.Timeout | undefined;
  const stream = new Duplex({
    write(chunk, _encoding, callback) {
      child.stdin.write(chunk, callback);
    },
    final(callback) {
      child.stdin.end(callback);
    },
    read() {
      child.stdout.resume();
    },
    destroy(error, callback) {
      if (timer) clearTimeout(timer);
      if (child.exitCode === null) child.kill();
      callback(error);
    },
  });
  child.stdin.on('error', () => {});
  child.stderr.on('data', (chunk: Buffer) => {
    if (stderr.length < 4096) stderr += chunk.toString('utf8');
  });
  child.stdout.on('data', (chunk: Buffer) => {
    received = true;
    if (!stream.push(chunk)) child.stdout.pause();
  });
  child.stdout.on('end', () => stream.push(null));
  child.on('error', (error) => stream.destroy(Object.assign(error, { code: 'ERR_SSH_DIAL' })));
  child.on('close', (code) => {
    if (code !== 0 && !received && !stream.destroyed) {
      const line = stderr.trim().split('\n').pop() || `ssh exited with code ${code}`;
      stream.destroy(Object.assign(new Error(`ssh ${target}: ${line}`), { code: 'ERR_SSH_DIAL' }));
    }
  });
  // What node:http expects of a socket beyond the stream itself.
  return Object.assign(stream, {
    setNoDelay: () => stream,
    setKeepAlive: () => stream,
    ref: () => stream,
    unref: () => stream,
    setTimeout(ms: number, listener?: () => void) {
      if (timer) clearTimeout(timer);
      if (listener) stream.once('timeout', listener);
      if (ms > 0) timer = setTimeout(() => stream.emit('timeout'), ms);
      return stream;
    },
  });
}

/**
 * Plain-http options every transport but TLS shares. `servername: ''` because the agent otherwise
 * derives a TLS server name from the host on every request, and its first `net.isIP` compiles
 * node's IPv6 pattern: 12 ms of the exec hot path, for a name plain http never sends.
 */
const PLAIN_HTTP = { servername: '' } as RequestOptions;

/**
 * The node:http / node:https request for one call on this transport. `fresh` takes a connection
 * of its own instead of the agent's kept-alive one: a hijacked call (exec start) consumes its
 * socket, and the next call (exec inspect) then finds the kept one still open, as the docker CLI does.
 */
async function open(
  endpoint: EngineEndpoint,
  options: RequestOptions,
  fresh = false,
): Promise<ClientRequest> {
  const transport = endpoint.transport;
  const own = fresh ? { agent: false } : {};
  if (transport.kind === 'unix')
    return httpRequest({ ...PLAIN_HTTP, ...options, ...own, socketPath: transport.socketPath });
  if (transport.kind === 'ssh') {
    return httpRequest({
      ...PLAIN_HTTP,
      ...options,
      host: 'docker',
      createConnection: () => sshConnection(transport) as unknown as import('node:net').Socket,
    });
  }
  if (!transport.tls)
    return httpRequest({ ...PLAIN_HTTP, ...options, ...own, host: transport.host, port: transport.port });
  const { request } = process.getBuiltinModule('node:https');
  const tls = transport.tls;
  return request({
    ...options,
    host: transport.host,
    port: transport.port,
    ...(tls.ca ? { ca: tls.ca } : {}),
    ...(tls.cert ? { cert: tls.cert } : {}),
    ...(tls.key ? { key: tls.key } : {}),
    rejectUnauthorized: tls.verify,
    agent: false,
  });
}

function headersFor(options: EngineRequestOptions): Record<string, string> {
  if (options.raw) return { 'Content-Type': options.raw.contentType };
  if (options.body !== undefined) return { 'Content-Type': 'application/json' };
  return {};
}

function send(req: ClientRequest, options: EngineRequestOptions): void {
  if (options.raw) {
    const data = options.raw.data;
    if (Buffer.isBuffer(data)) req.end(data);
    else (data as NodeJS.ReadableStream).pipe(req);
    return;
  }
  req.end(options.body === undefined ? undefined : JSON.stringify(options.body));
}

/**
 * One Engine API call: resolves with the status and the whole body (any status; the caller maps
 * it), rejects with DockerUnavailableError when the engine does not answer at all.
 */
export async function engineRequest(
  method: string,
  path: string,
  options: EngineRequestOptions,
): Promise<EngineResponse> {
  const endpoint = engineEndpoint();
  tracerFor()?.(['(engine API)', method, path]);
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const req = await open(endpoint, {
    method,
    path,
    headers: headersFor(options),
    timeout: timeoutMs,
    ...(options.signal ? { signal: options.signal } : {}),
  });
  return new Promise((resolve, reject) => {
    req.on('response', (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks), headers: res.headers }),
      );
      res.on('error', (error) => reject(transportError(error, endpoint, options.verb)));
    });
    req.on('timeout', () =>
      req.destroy(
        Object.assign(new Error(`no answer within ${timeoutMs} ms`), { code: 'ERR_ENGINE_TIMEOUT' }),
      ),
    );
    req.on('error', (error) => reject(transportError(error, endpoint, options.verb)));
    send(req, options);
  });
}

/** A call whose answer must be 2xx: the body, or the typed error of the engine's answer. */
export async function engineCall(
  method: string,
  path: string,
  options: EngineRequestOptions,
): Promise<Buffer> {
  const response = await engineRequest(method, path, options);
  if (response.status < 200 || response.status >= 300)
    throw statusError(options.verb, response.status, response.body);
  return response.body;
}

/** A 2xx call whose body is JSON. */
export async function engineJson(
  method: string,
  path: string,
  options: EngineRequestOptions,
): Promise<unknown> {
  const body = await engineCall(method, path, options);
  if (body.length === 0) return undefined;
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    throw new DockerEngineError(options.verb, 0, 'the engine answer is not JSON');
  }
}

/** A GET whose 404 means "not there": undefined then. */
export async function engineJsonOrMissing(path: string, verb: string, timeoutMs?: number): Promise<unknown> {
  try {
    return await engineJson('GET', path, { verb, ...(timeoutMs ? { timeoutMs } : {}) });
  } catch (error) {
    if (error instanceof DockerNotFoundError) return undefined;
    throw error;
  }
}

/**
 * A call that takes over the connection (`exec start`, `attach`): the engine answers 101 and the
 * socket carries the raw stream from then on. Resolves with that socket (and what was already
 * read past the headers); a normal answer is mapped like engineCall's.
 */
export async function engineHijack(
  path: string,
  options: EngineRequestOptions,
): Promise<{ socket: Duplex; head: Buffer }> {
  const endpoint = engineEndpoint();
  tracerFor()?.(['(engine API)', 'POST', path]);
  // Until the engine answers (an engine that never does would hang the caller: red team); the
  // stream itself may then be idle for as long as its command is (an install, a quiet exec).
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const req = await open(
    endpoint,
    {
      method: 'POST',
      path,
      headers: { ...headersFor(options), Connection: 'Upgrade', Upgrade: 'tcp' },
      timeout: timeoutMs,
    },
    true,
  );
  return new Promise((resolve, reject) => {
    req.on('timeout', () =>
      req.destroy(
        Object.assign(new Error(`no answer within ${timeoutMs} ms`), { code: 'ERR_ENGINE_TIMEOUT' }),
      ),
    );
    req.on('upgrade', (_res, socket, head) => {
      socket.setTimeout(0);
      resolve({ socket: socket as Duplex, head });
    });
    req.on('response', (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => reject(statusError(options.verb, res.statusCode ?? 0, Buffer.concat(chunks))));
    });
    req.on('error', (error) => reject(transportError(error, endpoint, options.verb)));
    send(req, options);
  });
}

/**
 * A call whose 2xx answer is a stream read as it comes (`logs --follow`): resolves with the
 * response once its headers arrived; a refusal is mapped like engineCall's.
 */
export async function engineStream(
  method: string,
  path: string,
  options: EngineRequestOptions,
): Promise<IncomingMessage> {
  const endpoint = engineEndpoint();
  tracerFor()?.(['(engine API)', method, path]);
  const req = await open(endpoint, { method, path, headers: headersFor(options) });
  return new Promise((resolve, reject) => {
    req.on('response', (res: IncomingMessage) => {
      const status = res.statusCode ?? 0;
      if (status >= 200 && status < 300) return resolve(res);
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => reject(statusError(options.verb, status, Buffer.concat(chunks))));
    });
    req.on('error', (error) => reject(transportError(error, endpoint, options.verb)));
    send(req, options);
  });
}

/** `name` for a path segment. */
export const segment = (name: string): string => encodeURIComponent(name);

/** `?a=1&filters=...` from the defined entries (objects as JSON). */
export function query(params: Record<string, string | number | boolean | object | undefined>): string {
  const parts: string[] = [];
  for (const [key, value] of Object.entries(params)) {
    if (value === undefined) continue;
    const text = typeof value === 'object' ? JSON.stringify(value) : String(value);
    parts.push(`${encodeURIComponent(key)}=${encodeURIComponent(text)}`);
  }
  return parts.length ? `?${parts.join('&')}` : '';
}

/** The `filters` object of a list call from `key=value` labels. */
export function labelFilters(labels: readonly string[], extra: Record<string, string[]> = {}): object {
  return { ...(labels.length ? { label: [...labels] } : {}), ...extra };
}
