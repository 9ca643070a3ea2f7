import { sanitizeName } from '@ca-sandbox/docker/contracts';
import { loadLifecycle } from '../lifecycle-api.js';
import { assertSandboxId } from '../options.js';
import type { Output } from '../output.js';

/**
 * `ca-sandbox report <id>`: what the sandbox's repository did, on one page: its source, its
 * install, every egress decision of every phase, the isolation gate (re-run now), and what the
 * report does not record yet. `--json` gives the versioned structure (SandboxReportSchema). Every
 * string the repository chose passes the output layer's neutraliser (out.table, sanitizeName).
 */
export async function reportCommand(out: Output, args: unknown[]): Promise<number> {
  const id = assertSandboxId(String(args[0]));
  const lifecycle = await loadLifecycle();
  const report = await lifecycle.sandboxReport(id);
  if (out.options.json) {
    out.json(report);
    return 0;
  }
  const clean = (text: string) => sanitizeName(text);
  const { source, install, network, isolation } = report;
  out.result(`report of ${clean(report.id)} (${clean(report.status)}), made ${report.generatedAt}`);
  out.result(
    `source     ${clean(source.source)} (repo ${clean(source.repo)}), created ${clean(source.createdAt)}`,
  );
  const deps = install.depsInstalled
    ? `${clean(install.image)}${install.imageCacheHit ? ' (cache hit)' : ''}`
    : `none (${clean(install.image)}, the bare toolchain image)`;
  out.result(`install    ${clean(install.provider)} via ${clean(install.builder)}: ${deps}`);
  const tools = Object.entries(install.toolchain).map(([tool, version]) => `${tool} ${version}`);
  if (tools.length) out.result(`tools      ${clean(tools.join(' · '))}`);
  for (const fallback of install.installFallbacks)
    out.result(`           install fallback taken: ${clean(fallback)}`);
  const reach =
    network.boxEgress === 'none'
      ? 'the box itself had no network'
      : `the box could reach ${clean(network.allow.join(', ') || 'its allowlist')}`;
  out.result(
    `network    ${clean(network.policy)} (${clean(network.runtime)}): ${reach}; ${network.allowed} request(s) allowed, ${network.refused} refused through the gateway`,
  );
  for (const credential of network.credentials)
    out.result(
      `           the gateway added ${clean(credential.header)} for ${clean(credential.domain)} (from ${clean(credential.source)}): the box never held it`,
    );
  const credentialColumn = network.decisions.some((row) => row.credential);
  if (network.decisions.length)
    out.table(
      ['PHASE', 'DECISION', 'DESTINATION', 'COUNT', ...(credentialColumn ? ['CREDENTIAL'] : [])],
      network.decisions.map((row) => [
        row.phase,
        row.allowed ? 'allowed' : 'REFUSED',
        row.destination,
        String(row.count),
        ...(credentialColumn ? [row.credential ? `added (${row.credential})` : '-'] : []),
      ]),
    );
  const failed = isolation.checks.filter((check) => !check.pass);
  out.result(
    `isolation  ${failed.length === 0 ? `${isolation.checks.length} checks passed` : `${failed.length} of ${isolation.checks.length} checks FAILED`} (re-run now${isolation.running ? '' : ', box stopped'})`,
  );
  for (const check of failed)
    out.result(`  FAILED ${clean(check.id)}: expected ${clean(check.expected)}, seen ${clean(check.seen)}`);
  const { entries, complete } = report.commands;
  out.result(
    `commands   ${entries.length} run in the box${complete ? '' : ' (the log reached its bound: later ones are not listed)'}`,
  );
  if (entries.length)
    out.table(
      ['STARTED', 'VIA', 'EXIT', 'DURATION', 'OUTPUT', 'COMMAND'],
      entries.map((entry) => [
        entry.startedAt,
        entry.via,
        entry.timedOut ? 'timeout' : entry.outOfMemory ? 'oom' : String(entry.exitCode ?? '-'),
        `${(entry.durationMs / 1000).toFixed(1)}s`,
        entry.stdoutBytes === null ? '-' : `${entry.stdoutBytes + (entry.stderrBytes ?? 0)} B`,
        entry.command.join(' '),
      ]),
    );
  out.info(`not recorded yet: ${report.notRecorded.join('; ')}`);
  return 0;
}
