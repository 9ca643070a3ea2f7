// Names and constants without dependencies: the exec hot path imports only this.
import {
  containerLabels,
  LABEL_ID,
  LABEL_ROLE,
  SANDBOX_LABEL,
  SANDBOX_LABEL_VALUE,
} from '@ca-sandbox/docker/process';
import { NotABoxError, SandboxNotFoundError } from './errors.js';
import { validateSandboxName } from './source.js';

/** The box user: never root, never anything else. */
export const BOX_USER = '1000:1000';
export const BOX_WORKDIR = '/work/repo';

/** Box, volume and network names are this prefix and the sandbox id. */
export const SANDBOX_PREFIX = 'ca-sbx-';
/**
 * Helper names are this prefix and the id. `ca-sbx_` can never begin a box name (`ca-sbx-` and an
 * id), so no sandbox id names another sandbox's helper: `ca-sbx-<x>-helper` was the box of a
 * sandbox called `<x>-helper`.
 */
export const HELPER_PREFIX = 'ca-sbx_helper-';

/** Names of a sandbox's objects (architecture.md: Names); the one home of the naming rule. */
export function sandboxNames(id: string): { box: string; helper: string; volume: string; network: string } {
  const base = `${SANDBOX_PREFIX}${id}`;
  return { box: base, helper: `${HELPER_PREFIX}${id}`, volume: base, network: base };
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

/**
 * The box container of sandbox `id`, after checking that it is one: ours (`ca.sandbox=1`), of this
 * id, with role `box`. exec, cp and shell go through here, so a helper (or any other container
 * that happens to carry the name) is never their target. SandboxNotFoundError when nothing has the
 * name, NotABoxError (usage) when something else does.
 */
export async function resolveBox(id: unknown): Promise<string> {
  const name = boxName(id);
  const labels = await containerLabels(name);
  if (!labels) throw new SandboxNotFoundError(String(id));
  const role = labels[LABEL_ROLE] ?? '';
  if (labels[SANDBOX_LABEL] !== SANDBOX_LABEL_VALUE || labels[LABEL_ID] !== id || role !== 'box') {
    throw new NotABoxError(String(id), name, labels[SANDBOX_LABEL] === SANDBOX_LABEL_VALUE ? role : '');
  }
  return name;
}
