import { docker, inspectContainer } from '@ca-sandbox/docker';
import { SandboxNotFoundError } from './errors.js';
import { validateSandboxName } from './source.js';

/** The box user: never root, never anything else. */
export const BOX_USER = '1000:1000';
export const BOX_WORKDIR = '/work/repo';

/** Names of a sandbox's objects (architecture.md: Names). */
export function sandboxNames(id: string): { box: string; helper: string; volume: string; network: string } {
  const base = `ca-sbx-${id}`;
  return { box: base, helper: `${base}-helper`, volume: base, network: base };
}

/** The box container of a (validated) sandbox id. */
export function boxName(id: unknown): string {
  return sandboxNames(validateSandboxName(id)).box;
}

/**
 * Maps a docker failure that may mean "no such box" to SandboxNotFoundError, confirming with an
 * inspect, because the text could also be the command's own stderr.
 */
export async function assertBoxRunning(id: string): Promise<void> {
  const inspect = await inspectContainer(boxName(id)).catch(() => undefined);
  if (!inspect || inspect.Config.Labels['ca.sandbox.id'] !== id) throw new SandboxNotFoundError(id);
  if (!inspect.State.Running)
    throw new SandboxNotFoundError(id, `the sandbox is ${inspect.State.Status}, not running`);
}

/** Docker's "that container is missing or stopped" wording, as printed by the CLI. */
export function looksLikeMissingContainer(stderr: string): boolean {
  return /^Error(?: response from daemon)?: (?:No such container|Container [0-9a-f]+ is not running)/m.test(
    stderr,
  );
}

/** Runs `fn` over `items` with at most `limit` in flight; results keep the input order. */
export async function mapLimit<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next;
      next += 1;
      results[index] = await fn(items[index] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/** `docker <kind> ls -q` filtered by labels; throws when docker fails (discovery must not be silent). */
export async function listIds(
  kind: 'container' | 'volume' | 'network',
  filters: string[],
): Promise<string[]> {
  const argv =
    kind === 'container'
      ? ['container', 'ls', '-a', '-q', '--no-trunc']
      : kind === 'volume'
        ? ['volume', 'ls', '-q']
        : ['network', 'ls', '-q', '--no-trunc'];
  for (const filter of filters) argv.push('--filter', filter);
  const { stdout } = await docker(argv);
  return stdout.split('\n').filter((line) => line.trim() !== '');
}
