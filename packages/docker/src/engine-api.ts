import { request } from 'node:http';
import { docker, tracerFor } from './exec-docker.js';

/** Reads that the engine answers over its socket in a millisecond, where the CLI costs ~25 ms. */
export type LabeledKind = 'container' | 'volume' | 'network';

const DEFAULT_SOCKET = '/var/run/docker.sock';

/**
 * The local engine socket, or undefined when docker is reached some other way (tcp, ssh, a
 * context, TLS settings): those keep going through the CLI, which knows how to reach them.
 */
export function engineSocket(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env.DOCKER_CONTEXT || env.DOCKER_TLS_VERIFY || env.DOCKER_CERT_PATH) return undefined;
  const host = env.DOCKER_HOST;
  if (!host) return DEFAULT_SOCKET;
  return host.startsWith('unix://') ? host.slice('unix://'.length) : undefined;
}

function getJson(socketPath: string, path: string, timeoutMs: number, method = 'GET'): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, path, method, timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        if (res.statusCode !== 200 && !(method === 'POST' && res.statusCode === 201))
          return reject(new Error(`engine answered ${res.statusCode}: ${body.slice(0, 200)}`));
        if (method === 'POST') return resolve(undefined);
        try {
          resolve(JSON.parse(body));
        } catch {
          reject(new Error('engine answer is not JSON'));
        }
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('engine socket timed out')));
    req.on('error', reject);
    req.end();
  });
}

const PATHS: Record<LabeledKind, string> = {
  container: '/containers/json?all=1&filters=',
  volume: '/volumes?filters=',
  network: '/networks?filters=',
};

/** One labeled object: its name and, when asked for, the value of one of its labels. */
export interface LabeledObject {
  name: string;
  label?: string;
}

function entries(kind: LabeledKind, answer: unknown): unknown[] | undefined {
  const list = kind === 'volume' ? ((answer as { Volumes?: unknown } | null)?.Volumes ?? []) : answer;
  return Array.isArray(list) ? list : undefined;
}

function toObject(kind: LabeledKind, raw: unknown, label?: string): LabeledObject | undefined {
  const item = raw as { Name?: unknown; Names?: unknown; Labels?: unknown };
  const name =
    kind === 'container'
      ? Array.isArray(item.Names) && typeof item.Names[0] === 'string'
        ? item.Names[0].replace(/^\//, '')
        : undefined
      : typeof item.Name === 'string'
        ? item.Name
        : undefined;
  if (!name) return undefined;
  const labels = (item.Labels ?? {}) as Record<string, unknown>;
  const value = label ? labels[label] : undefined;
  return typeof value === 'string' ? { name, label: value } : { name };
}

/**
 * Names of the containers (all states), volumes or networks carrying every `key=value` label,
 * read over the engine socket. Undefined when the socket is not the way to docker here or did not
 * answer: the caller then asks the CLI, which also reports an unreachable daemon properly.
 */
export async function listLabeledViaSocket(
  kind: LabeledKind,
  labels: string[],
  label?: string,
  timeoutMs = 10_000,
): Promise<LabeledObject[] | undefined> {
  const socket = engineSocket();
  if (!socket) return undefined;
  const path = `${PATHS[kind]}${encodeURIComponent(JSON.stringify({ label: labels }))}`;
  tracerFor()?.(['(engine API)', 'GET', path]);
  try {
    const list = entries(kind, await getJson(socket, path, timeoutMs));
    if (!list) return undefined;
    const objects = list.map((raw) => toObject(kind, raw, label));
    return objects.every((object) => object !== undefined) ? (objects as LabeledObject[]) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Containers (all states), volumes or networks carrying every `key=value` in `labels`, with the
 * value of `label` when given. Over the engine socket when that is how docker is reached here,
 * else (or when the socket does not answer) through the CLI, whose failures throw as usual: a
 * discovery never fails silently.
 */
export async function listLabeled(
  kind: LabeledKind,
  labels: string[],
  label?: string,
): Promise<LabeledObject[]> {
  const fast = await listLabeledViaSocket(kind, labels, label);
  if (fast) return fast;
  const filters = labels.flatMap((pair) => ['--filter', `label=${pair}`]);
  const name = kind === 'container' ? '{{.Names}}' : '{{.Name}}';
  const format = label ? `${name}\t{{.Label ${JSON.stringify(label)}}}` : name;
  const argv =
    kind === 'container'
      ? ['container', 'ls', '--all', ...filters, '--format', format]
      : [kind, 'ls', ...filters, '--format', format];
  const { stdout } = await docker(argv);
  return stdout
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      const [objectName = line, value] = line.split('\t');
      return label && value ? { name: objectName, label: value } : { name: objectName };
    });
}

/**
 * The id of a running exec in `container` whose arguments include `needle` (a nonce the caller
 * put there), over the engine socket; undefined when there is no socket or no such exec. The
 * docker CLI does not say which exec it started, and only the engine can resize its terminal.
 */
export async function findExecByArgument(
  container: string,
  needle: string,
  timeoutMs = 5_000,
): Promise<string | undefined> {
  const socket = engineSocket();
  if (!socket) return undefined;
  const name = encodeURIComponent(container);
  tracerFor()?.(['(engine API)', 'GET', `/containers/${name}/json`]);
  try {
    const inspect = (await getJson(socket, `/containers/${name}/json`, timeoutMs)) as { ExecIDs?: unknown };
    const ids = Array.isArray(inspect?.ExecIDs) ? inspect.ExecIDs.filter((id) => typeof id === 'string') : [];
    for (const id of ids as string[]) {
      const exec = (await getJson(socket, `/exec/${encodeURIComponent(id)}/json`, timeoutMs)) as {
        Running?: unknown;
        ProcessConfig?: { arguments?: unknown };
      };
      const args = exec?.ProcessConfig?.arguments;
      if (exec?.Running === true && Array.isArray(args) && args.includes(needle)) return id;
    }
  } catch {
    // no answer: no resize
  }
  return undefined;
}

/** Sets the terminal size of an exec started with a TTY (what `docker exec -t` does on SIGWINCH). */
export async function resizeExec(execId: string, rows: number, columns: number): Promise<boolean> {
  const socket = engineSocket();
  if (!socket || !(rows > 0 && columns > 0)) return false;
  const path = `/exec/${encodeURIComponent(execId)}/resize?h=${Math.floor(rows)}&w=${Math.floor(columns)}`;
  tracerFor()?.(['(engine API)', 'POST', path]);
  try {
    await getJson(socket, path, 5_000, 'POST');
    return true;
  } catch {
    return false;
  }
}
