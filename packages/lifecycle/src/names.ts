// Names and constants without dependencies: the exec hot path imports only this.
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

/** Docker's "that container is missing or stopped" wording, as printed by the CLI. */
export function looksLikeMissingContainer(stderr: string): boolean {
  return /^Error(?: response from daemon)?: (?:No such container|Container [0-9a-f]+ is not running)/m.test(
    stderr,
  );
}
