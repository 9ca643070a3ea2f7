import {
  BOX_LIMITS,
  BUILDERS,
  DEPS_VIEWS,
  GIT_MODES,
  NETWORK_POLICIES,
  RUNTIMES,
  SOURCE_LIMITS,
} from '@ca-sandbox/docker/contracts';
import { Command, Option } from 'commander';
import type { ActionContext } from './action-context.js';
import { Interrupt, type InterruptMode } from './interrupt.js';
import { runsOnce } from './lifecycle-api.js';
import { type GlobalOptions, Output } from './output.js';
import { cliVersion } from './version.js';

// Their homes are apart from the program, which imports the commands: a command imports them
// without an import cycle.
export type { ActionContext } from './action-context.js';
export { cliVersion } from './version.js';

/** Shared between the program and main(): which command runs, and the exit code it settled on. */
export interface RunState {
  command?: string;
  exitCode: number;
  output?: Output;
  /** 130/143 when the command was interrupted by SIGINT/SIGTERM (it wins over any other code). */
  signalExitCode?: number;
}

type Action = (
  out: Output,
  args: unknown[],
  options: Record<string, unknown>,
  context: ActionContext,
) => Promise<number>;

/** Output for the options of the command that runs (globals merged). */
export function outputFor(command: Command, streams?: Output['streams']): Output {
  const all = command.optsWithGlobals() as Partial<GlobalOptions>;
  const options: GlobalOptions = {
    json: Boolean(all.json),
    verbose: Boolean(all.verbose),
    quiet: Boolean(all.quiet),
    color: all.color !== false,
  };
  return new Output(options, streams);
}

function example(lines: string[]): string {
  return `\nExample${lines.length > 1 ? 's' : ''}:\n${lines.map((line) => `  $ ${line}`).join('\n')}\n`;
}

function addCreateOptions(command: Command): Command {
  return command
    .option('--name <id>', 'sandbox id (default: derived from the repo name)')
    .addOption(
      // No commander default: --with-claude must tell a --network the user gave from none.
      new Option(
        '--network <policy>',
        "network policy (default: offline); the clone reaches the repo's host only, through the egress gateway. offline: no dependency install (a cached deps image of the same lockfiles, else the bare toolchain image); clone-then-cut: the install reaches the provider's registries; allowlist: that, and the box itself reaches the --allow destinations. offline and clone-then-cut boxes have no network",
      ).choices([...NETWORK_POLICIES]),
    )
    .option(
      '--allow <dest>',
      'with --network allowlist: a destination the box may reach through the egress gateway: example.com, *.example.com, an IP or CIDR, each with an optional :port (default 443,80); repeatable. Addresses alone use EXPERIMENTAL host firewall rules',
      (value: string, previous: string[] = []) => [...previous, value],
    )
    .option(
      '--credential <spec>',
      "with --network allowlist: <domain>=env:<VAR>|file:<path>[,header=<name>]: the egress gateway adds this host value to the box's HTTPS requests for an allowed domain (Authorization: Bearer <value>, or the header named, as is); the box never sees the value; repeatable",
      (value: string, previous: string[] = []) => [...previous, value],
    )
    .addOption(new Option('--builder <builder>', 'how the deps image is built').choices([...BUILDERS]))
    .option('--ref <ref>', 'branch, tag or full commit sha to check out')
    .addOption(new Option('--runtime <runtime>', 'container runtime (runsc = gVisor)').choices([...RUNTIMES]))
    .option(
      '--memory <size>',
      `memory limit, e.g. 4g (swap is the same; default ${BOX_LIMITS.memory.default})`,
    )
    .option('--cpus <n>', `cpu limit, e.g. 1 or 0.5 (default ${BOX_LIMITS.cpus.default})`)
    .option('--pids <n>', `process limit (default ${BOX_LIMITS.pids.default})`)
    .option('--base-image <image>', 'base image instead of the provider default')
    .addOption(
      new Option(
        '--deps-view <view>',
        'how a node box sees its installed deps (default: setting deps.view, else overlay). overlay: node_modules are real folders under /work/repo, as after npm install on your machine (tools such as vite refuse files outside the project); links: node_modules entries link into the image (what a gVisor box gets)',
      ).choices([...DEPS_VIEWS]),
    )
    .option(
      '--max-source-bytes <size>',
      `cap on the bytes of files of the source and its checkout (${SOURCE_LIMITS.maxBytes / 1024 ** 2}m)`,
    )
    .option(
      '--max-source-entries <n>',
      `cap on the files and directories of the source and its checkout (${SOURCE_LIMITS.maxEntries})`,
    )
    .option(
      '--max-deps-size <size>',
      'cap on what the dependency install adds to the image, e.g. 4g (default env CA_SANDBOX_MAX_DEPS_SIZE, else 4g)',
    )
    .option(
      '--with-claude',
      'Claude Code in the box (offline-installed at build), egress to api.anthropic.com:443 only, gVisor where it can run that; no --network other than allowlist, no --allow; the key: --credential api.anthropic.com=env:ANTHROPIC_API_KEY (the gateway adds it, the box never holds it), else typed into `ca-sandbox shell`',
    );
}

/**
 * The commander program. Every action lazy-loads its module (and through it the lifecycle), so
 * `--version`, `--help` and usage errors load nothing but commander.
 */
export function createProgram(state: RunState, streams?: Output['streams']): Command {
  const program = new Command('ca-sandbox');
  const action =
    (load: () => Promise<Action>, interruptMode: InterruptMode = 'exit') =>
    async (...args: unknown[]): Promise<void> => {
      const command = args.at(-1) as Command;
      // Every command but the MCP server runs once and exits (lifecycle-api.ts says why it matters).
      if (command.name() !== 'mcp') runsOnce();
      const out = outputFor(command, streams);
      state.output = out;
      const interrupt = new Interrupt(interruptMode);
      try {
        if (out.options.verbose) {
          const { traceDocker } = await import('./commands/verbose.js');
          await traceDocker(out);
        }
        const run = await load();
        state.exitCode = await run(out, args.slice(0, -2), command.opts(), { signal: interrupt.signal });
      } finally {
        interrupt.dispose();
        state.signalExitCode = interrupt.exitCode;
      }
    };

  program
    .description('Explore an untrusted git repository in a throwaway, locked-down Docker box.')
    .version(cliVersion(), '-V, --version', 'print the version')
    .option('--json', 'machine-readable output (errors as {"error":{code,message}} on stderr)')
    .option('--verbose', 'print every call to the docker engine (API request or CLI argv) and stack traces')
    .option('-q, --quiet', 'only results and errors')
    .option('--no-color', 'no colors (also NO_COLOR=1)')
    .showSuggestionAfterError(true)
    // Every command's --help also lists --json, --quiet, --verbose and --no-color.
    .configureHelp({ showGlobalOptions: true })
    .hook('preSubcommand', (_program, sub) => {
      state.command = sub.name();
    })
    .addHelpText(
      'after',
      example([
        'ca-sandbox doctor',
        'id=$(ca-sandbox create https://github.com/octocat/Hello-World)',
        'ca-sandbox exec "$id" -- ls -la',
        'ca-sandbox destroy "$id"',
      ]),
    );

  program
    .command('doctor')
    .description('check docker, runtimes, nixpacks, base images and the firewall')
    .addHelpText('after', example(['ca-sandbox doctor', 'ca-sandbox doctor --json']))
    .action(action(async () => (await import('./commands/doctor.js')).doctorCommand));

  addCreateOptions(
    program
      .command('create')
      .alias('up')
      .description('clone, build, run and verify a sandbox; prints its id')
      .argument('<repo-url-or-path>', 'git URL or local directory'),
  )
    .addHelpText(
      'after',
      example([
        'ca-sandbox create https://github.com/octocat/Hello-World',
        'ca-sandbox create ./some-repo --name demo --network clone-then-cut --memory 1g',
        'ca-sandbox create https://example.com/x.git --network allowlist --allow 192.0.2.10',
      ]),
    )
    .action(action(async () => (await import('./commands/create.js')).createCommand, 'abort'));

  addCreateOptions(
    program
      .command('run')
      .description('create a sandbox, open a shell in it, destroy it when the shell exits')
      .argument('<repo-url-or-path>', 'git URL or local directory'),
  )
    .option('--keep', 'keep the sandbox after the shell exits')
    .addHelpText(
      'after',
      example(['ca-sandbox run https://github.com/octocat/Hello-World', 'ca-sandbox run ./repo --keep']),
    )
    .action(action(async () => (await import('./commands/run.js')).runCommand, 'abort'));

  program
    .command('list')
    .alias('ls')
    .description(
      'list sandboxes (read from docker labels only); -q prints the ids only; --images the image cache',
    )
    .option(
      '--images',
      'list the deps image cache instead: size, last use, in use, source, least recently used first (the first to go over cache.maxSize)',
    )
    .option(
      '--format <format>',
      "'table' (default), 'json', 'table <template>' or '<template>' such as '{{.ID}}\\t{{.Status}}'",
    )
    .option(
      '--filter <key=value>',
      'only sandboxes that match (repeatable; keys: id, status, network, runtime, provider, repo); with --images: repo, source, in-use',
      (value: string, previous: string[] = []) => [...previous, value],
    )
    .addHelpText(
      'after',
      `${example([
        'ca-sandbox list',
        'ca-sandbox ls -q | xargs ca-sandbox rm',
        "ca-sandbox ls --filter status=exited --format '{{.ID}}\\t{{.Repo}}'",
        'ca-sandbox ls --json',
        'ca-sandbox ls --images',
        'ca-sandbox ls --images --filter repo=express --filter in-use=false',
      ])}
Template fields: {{.ID}} {{.Status}} {{.Network}} {{.Runtime}} {{.Image}} {{.Created}} {{.CreatedAt}}
  {{.Repo}} {{.Source}} {{.Provider}} {{.Builder}} {{.Container}} {{.Volume}} {{.Dephash}}
  {{.CacheHit}}, or {{json .}} for the whole record. Different --filter keys must all match;
  a key given twice matches either value (as docker's filters).
`,
    )
    .action(action(async () => (await import('./commands/list.js')).listCommand));

  program
    .command('exec')
    .description(
      "run a command in a sandbox; streams its output (--json: the exec JSON) and exits with the command's code",
    )
    .argument('<id>', 'sandbox id')
    .argument('<cmd...>', 'the command and its arguments, after --')
    .option('--timeout <seconds>', 'kill the command inside the box after this many seconds')
    .option(
      '--max-bytes <n>',
      'with --json: cap on each of stdout and stderr (default 1 MiB; past it the start and the end are kept)',
    )
    .option(
      '-e, --env <KEY=VALUE>',
      "set a variable for the command (repeatable; not for secrets: the box's other processes can read it)",
      (value: string, previous: string[] = []) => [...previous, value],
    )
    .option('-w, --workdir <dir>', 'working directory in the box (relative to /work/repo, or absolute)')
    .addOption(new Option('-i, --interactive').hideHelp())
    .addOption(new Option('-t, --tty').hideHelp())
    .addHelpText(
      'after',
      `${example([
        'ca-sandbox exec demo -- ls -la',
        'ca-sandbox exec demo --timeout 30 -e CI=1 -- npm test',
        'ca-sandbox exec demo --json -w src -- cat index.js',
      ])}
Output streams as it comes (on a terminal through a filter that keeps colours and drops control
strings; into a pipe or file as raw bytes). stdin is never read: data on it is refused (there is
no copy-in); for a terminal in the box use \`ca-sandbox shell <id>\`. Ctrl-C stops the command
inside the box.
Exit code: the command's own; 124 on --timeout; 130/143 when interrupted; 127 when the command
is not found in the box, 126 when it cannot run there (not executable, no such working directory);
125 when ca-sandbox failed before the command ran.
`,
    )
    .action(action(async () => (await import('./commands/exec.js')).execCommand, 'none'));

  program
    .command('shell')
    .description('interactive shell in a sandbox at /work/repo')
    .argument('<id>', 'sandbox id')
    .addHelpText('after', example(['ca-sandbox shell demo']))
    .action(action(async () => (await import('./commands/shell.js')).shellCommand, 'none'));

  program
    .command('start')
    .description('start a stopped sandbox again; re-runs the isolation gate before anything runs in it')
    .argument('<id>', 'sandbox id')
    .addHelpText('after', example(['ca-sandbox start demo', 'ca-sandbox start demo --json']))
    .action(action(async () => (await import('./commands/start.js')).startCommand));

  program
    .command('stop')
    .description('stop a sandbox (its processes end; the repo volume stays until destroy)')
    .argument('<id>', 'sandbox id')
    .addHelpText('after', example(['ca-sandbox stop demo']))
    .action(action(async () => (await import('./commands/start.js')).stopCommand));

  program
    .command('cp')
    .description('copy a file or directory OUT of a sandbox (copying in is refused)')
    .argument('<id:path>', 'source inside the box, e.g. demo:/work/repo/dist')
    .argument(
      '<dest>',
      'host path; an existing directory receives the entry inside it; - writes a tar stream to stdout',
    )
    .option('--force', 'replace an existing FILE of the same name (a directory is never replaced)')
    .addOption(
      new Option(
        '--git <mode>',
        'git directories: withhold (default; left out and reported) or sanitized (history kept; our own minimal config, no hooks, no exec bits)',
      ).choices([...GIT_MODES]),
    )
    .addHelpText(
      'after',
      example([
        'ca-sandbox cp demo:/work/repo/report.txt .',
        'ca-sandbox cp demo:dist ./out',
        'ca-sandbox cp demo:/work/repo ./vetted --git sanitized',
        'ca-sandbox cp demo:dist - | tar -t',
      ]),
    )
    .action(action(async () => (await import('./commands/cp.js')).cpCommand));

  program
    .command('destroy')
    .alias('rm')
    .description('remove sandboxes (container, volume, network) and verify nothing is left')
    .argument('[id...]', 'sandbox ids')
    .option('--all', 'every sandbox')
    .option('--keep-volume', 'keep the source volume')
    .option(
      '--keep-report',
      "first keep the sandbox's report (in the state dir; `ca-sandbox report <id>` shows it once the box is gone)",
    )
    .addHelpText(
      'after',
      example(['ca-sandbox destroy demo', 'ca-sandbox destroy demo --keep-report', 'ca-sandbox rm --all']),
    )
    .action(action(async () => (await import('./commands/destroy.js')).destroyCommand, 'abort'));

  program
    .command('prune')
    .description('remove every object labeled ca.sandbox=1 (and with --images the ca-sbx:* cache)')
    .option('--dry-run', 'only list what would be removed')
    .option('--images', 'also remove cached dependency images')
    .addHelpText('after', example(['ca-sandbox prune --dry-run', 'ca-sandbox prune --images']))
    .action(action(async () => (await import('./commands/prune.js')).pruneCommand, 'abort'));

  program
    .command('verify')
    .description('re-run the isolation gate on a running sandbox and print each check')
    .argument('<id>', 'sandbox id')
    .addHelpText('after', example(['ca-sandbox verify demo', 'ca-sandbox verify demo --json']))
    .action(action(async () => (await import('./commands/verify.js')).verifyCommand));

  program
    .command('report')
    .description(
      'what the sandbox did, on one page: source, install, egress decisions, isolation gate, commands, files changed; --json the versioned structure; a destroyed sandbox: the report kept by destroy --keep-report',
    )
    .argument('<id>', 'sandbox id')
    .option(
      '--html <file>',
      'write the report as one self-contained page instead of printing it (no script, loads nothing; a new file only)',
    )
    .option(
      '--all-files',
      'list every file changed, each on a row of its own (by default a new or deleted folder of more than 100 entries, or a folder with more than 100 entries modified, is one row with their counts, and the terminal shows 40 rows)',
    )
    .addHelpText(
      'after',
      example([
        'ca-sandbox report demo',
        'ca-sandbox report demo --json',
        'ca-sandbox report demo --html demo-report.html',
      ]),
    )
    .action(action(async () => (await import('./commands/report.js')).reportCommand));

  program
    .command('config')
    .description('show each effective setting and where it came from (file, env, flag, default)')
    .argument(
      '[setting]',
      "a setting's name (as listed, e.g. baseImages.node): print its value alone; `path`: the configuration file's path",
    )
    .addHelpText(
      'after',
      `${example(['ca-sandbox config', 'ca-sandbox config --json', 'ca-sandbox config baseImages.node', 'ca-sandbox config path'])}
Settings come from one file (Linux: $XDG_CONFIG_HOME/ca-sandbox/config.json, default ~/.config/...;
macOS: ~/Library/Application Support/ca-sandbox/config.json; CA_SANDBOX_CONFIG names another),
then CA_SANDBOX_* variables, then the flags of each command. bash scripts/setup.sh writes the file.
`,
    )
    .action(action(async () => (await import('./commands/config.js')).configCommand));

  program
    .command('egress')
    .description('what the clone and the install reached through the egress gateway, and what was refused')
    .argument('<id>', 'sandbox id')
    .addHelpText('after', example(['ca-sandbox egress demo', 'ca-sandbox egress demo --json']))
    .action(action(async () => (await import('./commands/egress.js')).egressCommand));

  program
    .command('mcp')
    .description('stdio MCP server with the same operations, for agents')
    .addHelpText('after', example(['ca-sandbox mcp', 'claude mcp add ca-sandbox -- ca-sandbox mcp']))
    .action(action(async () => (await import('./commands/mcp.js')).mcpCommand, 'none'));

  return program;
}
