// `ca-sandbox destroy <id...> [--keep-volume]` without commander and without the whole lifecycle
// (its schemas, the build package): destroy is measured against raw `docker rm -f` + `docker
// volume rm`, node's start included. Anything but the plain form (--all, --keep-report, --help,
// --verbose, an unknown flag) goes to the full CLI.
import { destroyEach, reportDestroyed } from './commands/teardown-report.js';
import { describeError, exitCodeFor } from './error-report.js';
import { assertSandboxId } from './exec-options.js';
import { Interrupt } from './interrupt.js';
import { Output } from './output.js';

interface PlainDestroy {
  ids: string[];
  keepVolume: boolean;
  json: boolean;
  quiet: boolean;
  color: boolean;
}

/** The plain destroy form, or undefined for anything the full parser should see. */
export function parsePlainDestroy(argv: readonly string[]): PlainDestroy | undefined {
  if (argv[0] !== 'destroy' && argv[0] !== 'rm') return undefined;
  const plain: PlainDestroy = { ids: [], keepVolume: false, json: false, quiet: false, color: true };
  for (const arg of argv.slice(1)) {
    if (arg === '--json') plain.json = true;
    else if (arg === '--keep-volume') plain.keepVolume = true;
    else if (arg === '--quiet' || arg === '-q') plain.quiet = true;
    else if (arg === '--no-color') plain.color = false;
    else if (arg.startsWith('-')) return undefined;
    else plain.ids.push(arg);
  }
  return plain.ids.length > 0 ? plain : undefined;
}

/** Runs a plain destroy and resolves to its exit code; undefined when the full CLI must handle argv. */
export async function fastDestroy(argv: readonly string[]): Promise<number | undefined> {
  const plain = parsePlainDestroy(argv);
  if (!plain) return undefined;
  const out = new Output({ json: plain.json, verbose: false, quiet: plain.quiet, color: plain.color });
  // As the full CLI's destroy: a signal lets the sandbox being removed finish, then stops.
  const interrupt = new Interrupt('abort');
  try {
    for (const id of plain.ids) assertSandboxId(id);
    const { destroySandbox } = await import('@ca-sandbox/lifecycle/destroy');
    const keepVolume = plain.keepVolume;
    const { results, notFound } = await destroyEach(
      [...new Set(plain.ids)],
      (id) => destroySandbox(id, { keepVolume }),
      { all: false, signal: interrupt.signal },
    );
    const code = reportDestroyed(out, results, notFound);
    return interrupt.exitCode ?? code;
  } catch (error) {
    const report = describeError(error);
    out.error(report, error);
    return interrupt.exitCode ?? exitCodeFor(report.kind);
  } finally {
    interrupt.dispose();
  }
}
