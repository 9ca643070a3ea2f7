import { sanitizeName } from '@ca-sandbox/docker/contracts';
import type { ActionContext } from '../action-context.js';
import { allowlistWarning, loadLifecycle, type SandboxRecord } from '../lifecycle-api.js';
import { type CreateFlags, resolveCreateOptions } from '../options.js';
import type { Output } from '../output.js';
import { formatElapsed, Progress } from '../progress.js';

export type CreateCommandFlags = CreateFlags;

/** create/run shared part: validate, warn, create with live progress. */
export async function createWithProgress(
  out: Output,
  source: string,
  flags: CreateCommandFlags,
  { signal, showNext }: { signal: AbortSignal; showNext: boolean },
): Promise<SandboxRecord> {
  const request = resolveCreateOptions(source, flags);
  const warning = request.network === 'allowlist' ? await allowlistWarning(request.allow ?? []) : undefined;
  if (warning) out.warn(warning);
  const lifecycle = await loadLifecycle();
  // Loaded before anything is created: the code after createSandbox loads nothing more, so an
  // install replaced under a running create (a chunk gone) cannot leave a box nobody was told of.
  const { OFFLINE_NOTICE } = await import('@ca-sandbox/build');
  const progress = new Progress(out);
  const started = Date.now();
  let made: SandboxRecord | undefined;
  try {
    const record = await lifecycle.createSandbox(request, {
      onPhase: progress.onPhase,
      onLog: progress.onLog,
      // One line whatever the verbosity (why a --with-claude box does not get gVisor, a registry
      // certificate the install will refuse), kept on screen above the live frame.
      onNotice: progress.warn,
      signal,
    });
    // A signal that lands after the last check inside createSandbox: the box is whole, but the
    // user asked to stop, so it goes as an aborted create's objects go.
    made = record;
    if (signal.aborted) throw new lifecycle.CreateAbortedError();
    progress.stop();
    out.info(summary(out, record, Date.now() - started, { showNext, offlineNotice: OFFLINE_NOTICE }));
    return record;
  } catch (error) {
    progress.stop();
    // The box is whole but its id never reached the user (an abort, a failed summary): it goes
    // as an aborted create's objects go, not left running unknown.
    if (made) await lifecycle.destroySandbox(made.id);
    throw error;
  }
}

/** `node 22.23.5 · npm 10.9.9` (the versions come from an image label: sanitised). */
export function toolchainLine(toolchain: Record<string, string>): string {
  const parts = Object.entries(toolchain).map(([name, version]) => `${name} ${version}`);
  return parts.length ? sanitizeName(parts.join(' · ')) : 'unknown (the image has no toolchain label)';
}

export function summary(
  out: Output,
  record: SandboxRecord,
  elapsedMs: number,
  { showNext, offlineNotice }: { showNext: boolean; offlineNotice: string },
): string {
  const built = record.imageSource ? `, built from ${sanitizeName(record.imageSource)}` : '';
  const hit = record.imageCacheHit ? ` (cache hit${built})` : '';
  const image = `${sanitizeName(record.image)}${hit}`;
  const deps = record.depsInstalled
    ? record.imageCacheHit
      ? 'installed (cached image)'
      : 'installed'
    : out.yellow(`none: ${offlineNotice} (--network clone-then-cut installs them)`);
  const lines = [
    `${out.green('sandbox ready:')} ${out.bold(sanitizeName(record.id))} in ${formatElapsed(elapsedMs)}`,
    `  repo     ${sanitizeName(record.repo)}`,
    `  image    ${image}`,
    `  deps     ${deps}`,
    `  tools    ${toolchainLine(record.toolchain)}`,
    `  network  ${sanitizeName(record.network)}   runtime ${sanitizeName(record.runtime)}`,
  ];
  if (record.allow?.length)
    // Not .map(sanitizeName): map's index would be its length cap (every entry came out as `…`).
    lines.push(`  allow    ${record.allow.map((entry) => sanitizeName(entry)).join(' ')} (nothing else)`);
  for (const credential of record.credentials ?? [])
    lines.push(
      `  secret   ${sanitizeName(credential.header)} for ${sanitizeName(credential.domain)} from ${sanitizeName(credential.source)}: added by the gateway, never in the box`,
    );
  const claudeKey = record.credentials?.some((each) => each.domain === 'api.anthropic.com');
  if (record.withClaude) lines.push(...claudeLines(record.id, showNext, Boolean(claudeKey)));
  const egress = record.egress ?? [];
  if (egress.length > 0) {
    const count = (allowed: boolean) =>
      egress.filter((row) => row.allowed === allowed).reduce((sum, row) => sum + row.count, 0);
    const refused = egress.filter((row) => !row.allowed).map((row) => sanitizeName(row.destination));
    lines.push(
      `  egress   ${count(true)} allowed, ${count(false)} refused${refused.length ? ` (${refused.slice(0, 3).join(', ')}${refused.length > 3 ? ', ...' : ''})` : ''}   ca-sandbox egress ${sanitizeName(record.id)}`,
    );
  }
  // `run` goes on to the shell and the teardown itself: telling its user to do both is noise.
  if (showNext) {
    lines.push(
      `  next     ca-sandbox shell ${sanitizeName(record.id)}   |   ca-sandbox destroy ${sanitizeName(record.id)}`,
    );
  }
  return lines.join('\n');
}

/**
 * How the key gets into a --with-claude box: added by the gateway (`--credential
 * api.anthropic.com=…`), or typed by the user into the box's shell. `run` is already on its way to
 * the shell.
 */
export function claudeLines(id: string, showNext: boolean, gatewayKey = false): string[] {
  const name = sanitizeName(id);
  const open = showNext ? `ca-sandbox shell ${name}, then run` : 'in the shell, run';
  if (gatewayKey)
    return [
      `  claude   ${open} \`claude\`: the gateway adds the API key to its requests, the box never holds it (the repo's code can still spend it on the API while the box runs)`,
    ];
  return [
    `  claude   ${open} \`claude\` and paste a dedicated, short-lived, spend-capped API key (never your own; the repo's code can read it)`,
    `           then ca-sandbox destroy ${name} and revoke the key`,
  ];
}

/** `ca-sandbox create <repo>`: prints the id (JSON: the sandbox record). */
export async function createCommand(
  out: Output,
  args: unknown[],
  options: Record<string, unknown>,
  { signal }: ActionContext,
): Promise<number> {
  const record = await createWithProgress(out, String(args[0] ?? ''), options as CreateCommandFlags, {
    signal,
    showNext: true,
  });
  if (out.options.json) out.json(record);
  else out.result(sanitizeName(record.id));
  return 0;
}
