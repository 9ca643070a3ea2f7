// Names and constants without dependencies: the exec hot path imports only this.
import {
  containerLabels,
  LABEL_ID,
  LABEL_ROLE,
  SANDBOX_LABEL,
  SANDBOX_LABEL_VALUE,
  sandboxNames,
} from '@ca-sandbox/docker/process';
import { NotABoxError, SandboxNotFoundError } from './errors.js';
import { validateSandboxName } from './source.js';

/** The box container of a (validated) sandbox id. */
export function boxName(id: unknown): string {
  return sandboxNames(validateSandboxName(id)).box;
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
