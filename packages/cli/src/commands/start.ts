import { sanitizeName } from '@ca-sandbox/docker/contracts';
import { loadLifecycle } from '../lifecycle-api.js';
import { assertSandboxId } from '../options.js';
import type { Output } from '../output.js';
import { verifyRows } from './verify.js';

/**
 * `ca-sandbox start <id>`: starts a stopped box behind the isolation gate (allowlist boxes only
 * with their host rules in place). Exit 0 once every check passes; a failing check stops the box
 * again and exits 1.
 */
export async function startCommand(out: Output, args: unknown[]): Promise<number> {
  const id = assertSandboxId(String(args[0]));
  const lifecycle = await loadLifecycle();
  const result = await lifecycle.startSandbox(id);
  const verify = verifyRows(result.report);
  const notices = result.notices ?? [];
  if (out.options.json) {
    out.json({ id: result.id, started: result.started, verify, notices });
  } else {
    for (const notice of notices) out.warn(sanitizeName(notice));
    const name = sanitizeName(result.id);
    out.result(result.started ? `started ${name}` : `${name} was already running`);
    out.info(out.green(`all ${verify.checks.length} isolation checks pass`));
  }
  return 0;
}

/** `ca-sandbox stop <id>`: stops a box; its volume and labels stay, `start` brings it back. */
export async function stopCommand(out: Output, args: unknown[]): Promise<number> {
  const id = assertSandboxId(String(args[0]));
  const lifecycle = await loadLifecycle();
  const result = await lifecycle.stopSandbox(id);
  if (out.options.json) out.json(result);
  else out.result(result.stopped ? `stopped ${sanitizeName(id)}` : `${sanitizeName(id)} was not running`);
  return 0;
}
