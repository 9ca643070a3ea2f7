import { loadLifecycle } from '../lifecycle-api.js';
import { assertSandboxId } from '../options.js';
import type { Output } from '../output.js';

/** `ca-sandbox shell <id>`: interactive shell at /work/repo; exits with the shell's code. */
export async function shellCommand(_out: Output, args: unknown[]): Promise<number> {
  const id = assertSandboxId(String(args[0]));
  const lifecycle = await loadLifecycle();
  return lifecycle.openShell(id);
}
