import { UsageError } from '../errors.js';
import { allowlistWarning, loadLifecycle, type SandboxRecord } from '../lifecycle-api.js';
import { type CreateFlags, resolveCreateOptions } from '../options.js';
import type { Output } from '../output.js';
import { formatElapsed, Progress } from '../progress.js';
import { sanitizeName } from '../sanitize.js';

export type CreateCommandFlags = CreateFlags & { withClaude?: boolean };

/** Refuses --with-claude: an agent inside a box is a deliberate, separate path with its own rules. */
export function rejectWithClaude(flags: { withClaude?: boolean }): void {
  if (!flags.withClaude) return;
  throw new UsageError(
    '--with-claude is not on the default path: running an agent inside a box is covered by the sandbox-claude-inside skill of the ca-sandbox Claude Code plugin (hardened defaults, never a credentials volume in a box that runs untrusted code)',
    'WITH_CLAUDE_NOT_DEFAULT',
    'create the box without --with-claude, then follow plugin/skills/sandbox-claude-inside/SKILL.md',
  );
}

/** Aborts on the first Ctrl-C so the lifecycle can clean up; a second one exits at once. */
function abortOnInterrupt(): { signal: AbortSignal; dispose: () => void } {
  const controller = new AbortController();
  const onSignal = () => {
    if (controller.signal.aborted) process.exit(130);
    controller.abort(new Error('interrupted'));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return {
    signal: controller.signal,
    dispose: () => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}

/** create/run shared part: validate, warn, create with live progress. */
export async function createWithProgress(
  out: Output,
  source: string,
  flags: CreateCommandFlags,
): Promise<SandboxRecord> {
  rejectWithClaude(flags);
  const request = resolveCreateOptions(source, flags);
  const warning = request.network === 'allowlist' ? await allowlistWarning(request.allow ?? []) : undefined;
  if (warning) out.warn(warning);
  const lifecycle = await loadLifecycle();
  const progress = new Progress(out);
  const interrupt = abortOnInterrupt();
  const started = Date.now();
  try {
    const record = await lifecycle.createSandbox(request, {
      onPhase: progress.onPhase,
      onLog: progress.onLog,
      signal: interrupt.signal,
    });
    progress.stop();
    out.info(summary(out, record, Date.now() - started));
    return record;
  } catch (error) {
    progress.stop();
    throw error;
  } finally {
    interrupt.dispose();
  }
}

function summary(out: Output, record: SandboxRecord, elapsedMs: number): string {
  const image = `${sanitizeName(record.image)}${record.imageCacheHit ? ' (cache hit)' : ''}`;
  return [
    `${out.green('sandbox ready:')} ${out.bold(sanitizeName(record.id))} in ${formatElapsed(elapsedMs)}`,
    `  repo     ${sanitizeName(record.repo)}`,
    `  image    ${image}`,
    `  network  ${sanitizeName(record.network)}   runtime ${sanitizeName(record.runtime)}`,
    `  next     ca-sandbox shell ${sanitizeName(record.id)}   |   ca-sandbox destroy ${sanitizeName(record.id)}`,
  ].join('\n');
}

/** `ca-sandbox create <repo>`: prints the id (JSON: the sandbox record). */
export async function createCommand(
  out: Output,
  args: unknown[],
  options: Record<string, unknown>,
): Promise<number> {
  const record = await createWithProgress(out, String(args[0] ?? ''), options as CreateCommandFlags);
  if (out.options.json) out.json(record);
  else out.result(sanitizeName(record.id));
  return 0;
}
