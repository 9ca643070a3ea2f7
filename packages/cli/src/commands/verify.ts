import { type IsolationReport, loadLifecycle } from '../lifecycle-api.js';
import { assertSandboxId } from '../options.js';
import type { Output } from '../output.js';

/** One row per isolation check: what it checks, what was expected, what docker inspect showed. */
export interface VerifyRow {
  check: string;
  title: string;
  cis: string;
  expected: string;
  seen: string;
  pass: boolean;
}

/** The JSON of `verify`: the report with its checks as rows. */
export function verifyRows(report: Omit<IsolationReport, 'running'> & { running?: boolean }): {
  ok: boolean;
  container: string;
  running?: boolean;
  checks: VerifyRow[];
} {
  return {
    ok: report.ok,
    container: report.container,
    ...(report.running !== undefined ? { running: report.running } : {}),
    checks: report.checks.map((c) => ({
      check: c.id,
      title: c.title,
      cis: c.cis,
      expected: c.expected,
      seen: c.seen,
      pass: c.pass,
    })),
  };
}

/** `ca-sandbox verify <id>`: exit 0 when every check passes, 1 otherwise. */
export async function verifyCommand(out: Output, args: unknown[]): Promise<number> {
  const id = assertSandboxId(String(args[0]));
  const lifecycle = await loadLifecycle();
  const report = verifyRows(await lifecycle.verifySandbox(id));
  if (out.options.json) {
    out.json(report);
  } else {
    // Numbered after the CIS Docker Benchmark (v1.6) container-runtime check each row matches.
    out.table(
      ['CIS', 'CHECK', 'EXPECTED', 'SEEN', 'RESULT'],
      report.checks.map((row) => [row.cis, row.check, row.expected, row.seen, row.pass ? 'pass' : 'FAIL']),
    );
    // The checks read the box's configuration, which a stopped box keeps: they say how it starts.
    if (report.running === false)
      out.info(
        out.yellow('the box is stopped: these are the settings it starts with (`start` checks them again)'),
      );
    const failed = report.checks.filter((row) => !row.pass).length;
    out.info(
      failed === 0
        ? out.green(`all ${report.checks.length} isolation checks pass`)
        : out.red(`${failed} of ${report.checks.length} isolation checks FAIL`),
    );
  }
  return report.ok ? 0 : 1;
}
