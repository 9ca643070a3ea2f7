import { CommanderError } from 'commander';
import { describeError, EXIT_EXEC_TOOL_FAILED, EXIT_USAGE, exitCodeFor } from './error-report.js';
import { Output, type OutputStreams } from './output.js';
import { createProgram, type RunState } from './program.js';

/** Commander's own outcomes that are not errors. */
const CLEAN_EXITS = new Set(['commander.helpDisplayed', 'commander.version', 'commander.help']);

/** Options seen on the raw argv, for reporting errors raised before commander settled them. */
function fallbackOutput(argv: readonly string[], streams?: OutputStreams): Output {
  const upTo = argv.indexOf('--');
  const flags = upTo === -1 ? argv : argv.slice(0, upTo);
  return new Output(
    {
      json: flags.includes('--json'),
      verbose: flags.includes('--verbose'),
      quiet: flags.includes('--quiet') || flags.includes('-q'),
      color: !flags.includes('--no-color'),
    },
    streams,
  );
}

/**
 * Runs the CLI on `argv` (the user's arguments, without node and the script) and resolves to the
 * exit code. Never throws: every error becomes one line (or one JSON object) on stderr.
 */
export async function main(argv: readonly string[], streams?: OutputStreams): Promise<number> {
  const state: RunState = { exitCode: 0 };
  const program = createProgram(state, streams);
  const out = () => state.output ?? fallbackOutput(argv, streams);
  // Commander reports usage errors through us, so that --json and exit code 2 apply to them too.
  program.exitOverride();
  program.configureOutput({
    writeOut: (text) => (streams?.stdout ?? process.stdout).write(text),
    writeErr: (text) => (streams?.stderr ?? process.stderr).write(text),
    outputError: () => {},
  });
  for (const command of program.commands) {
    command.exitOverride();
    command.configureOutput(program.configureOutput());
  }
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return state.signalExitCode ?? state.exitCode;
  } catch (error) {
    if (error instanceof CommanderError) {
      if (CLEAN_EXITS.has(error.code)) return 0;
      // Commander puts its suggestion on a second line ("(Did you mean ls?)"): that is the hint.
      const [message = 'invalid usage', ...more] = error.message
        .replace(/^error: /, '')
        .split('\n')
        .map((line) => line.trim())
        .filter(Boolean);
      const suggestion = more.map((line) => line.replace(/^\((.*)\)$/, '$1')).join(' ');
      const hint =
        state.command === 'exec' && error.code === 'commander.unknownOption'
          ? 'put the command after --, e.g. ca-sandbox exec <id> -- ls -la'
          : suggestion || 'see --help';
      out().error({ code: 'USAGE', kind: 'usage', message, hint });
      return state.command === 'exec' ? EXIT_EXEC_TOOL_FAILED : EXIT_USAGE;
    }
    const report = describeError(error);
    out().error(report, error);
    if (state.signalExitCode !== undefined) return state.signalExitCode;
    return state.command === 'exec' ? EXIT_EXEC_TOOL_FAILED : exitCodeFor(report.kind);
  }
}
