// `ca-sandbox exec <id> [flags] -- <cmd...>` without commander: the one command whose start-up is
// budgeted against raw `docker exec`. Anything but the plain form goes to the full CLI.
import { runExec } from './commands/exec.js';
import { describeError, EXIT_EXEC_TOOL_FAILED } from './error-report.js';
import type { ExecFlags } from './exec-options.js';
import { Output } from './output.js';

interface PlainExec {
  id: string;
  command: string[];
  flags: ExecFlags;
  json: boolean;
  quiet: boolean;
  color: boolean;
}

/**
 * Flags that take a value, by spelling (the commander names of program.ts; a test holds the two
 * lists together, since importing commander here would cost the start-up this path exists for).
 */
export const VALUED_FLAGS = new Map<string, 'timeout' | 'maxBytes' | 'env' | 'workdir'>([
  ['--timeout', 'timeout'],
  ['--max-bytes', 'maxBytes'],
  ['-e', 'env'],
  ['--env', 'env'],
  ['-w', 'workdir'],
  ['--workdir', 'workdir'],
]);

/** The plain exec form, or undefined for anything the full parser should see (help, odd flags). */
export function parsePlainExec(argv: readonly string[]): PlainExec | undefined {
  const dash = argv.indexOf('--');
  const id = argv[1];
  if (argv[0] !== 'exec' || dash < 2 || id === undefined || id.startsWith('-')) return undefined;
  const command = argv.slice(dash + 1);
  if (command.length === 0) return undefined;
  const plain: PlainExec = { id, command, flags: {}, json: false, quiet: false, color: true };
  for (let index = 2; index < dash; index += 1) {
    const arg = argv[index] as string;
    const valued = VALUED_FLAGS.get(arg);
    if (valued) {
      const value = argv[index + 1];
      if (value === undefined || index + 1 >= dash) return undefined;
      if (valued === 'env') plain.flags.env = [...(plain.flags.env ?? []), value];
      else plain.flags[valued] = value;
      index += 1;
    } else if (arg === '--json') plain.json = true;
    else if (arg === '--quiet' || arg === '-q') plain.quiet = true;
    else if (arg === '--no-color') plain.color = false;
    else return undefined;
  }
  return plain;
}

/** Runs a plain exec and resolves to its exit code; undefined when the full CLI must handle argv. */
export async function fastExec(argv: readonly string[]): Promise<number | undefined> {
  const plain = parsePlainExec(argv);
  if (!plain) return undefined;
  const out = new Output({ json: plain.json, verbose: false, quiet: plain.quiet, color: plain.color });
  try {
    return await runExec(out, plain.id, plain.command, plain.flags);
  } catch (error) {
    out.error(describeError(error), error);
    return EXIT_EXEC_TOOL_FAILED;
  }
}
