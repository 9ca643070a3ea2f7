/**
 * The CLI loads @ca-sandbox/lifecycle (and through it docker, build, run, network) only in the
 * commands that need it, so that `--version`, `--help` and usage errors stay cheap.
 */
export type Lifecycle = typeof import('@ca-sandbox/lifecycle');

export type SandboxRecord = Awaited<ReturnType<Lifecycle['createSandbox']>>;
export type CreateOptions = Parameters<Lifecycle['createSandbox']>[0];
export type CreateHooks = NonNullable<Parameters<Lifecycle['createSandbox']>[1]>;
export type PhaseEvent = Parameters<NonNullable<CreateHooks['onPhase']>>[0];
export type ExecResult = Awaited<ReturnType<Lifecycle['execInSandbox']>>;
export type CpOutResult = Awaited<ReturnType<Lifecycle['cpOut']>>;
export type TeardownResult = Awaited<ReturnType<Lifecycle['destroySandbox']>>;
export type IsolationReport = Awaited<ReturnType<Lifecycle['verifySandbox']>>;
export type SandboxReport = Awaited<ReturnType<Lifecycle['sandboxReport']>>;

let loaded: Promise<Lifecycle> | undefined;
let oneShot = false;

/**
 * Called by a command that runs once and exits (all but the MCP server). zod compiles each object
 * schema into a function (`new Function`) on its first parse; a process that parses each schema a
 * few times and exits pays the compiles without their gain: jitless cut zod's CPU time in one
 * `create` from about 107 to 58 ms (cpu profile). The MCP server parses for hours and keeps them.
 */
export function runsOnce(): void {
  oneShot = true;
}

/** The lifecycle package, imported on first use. */
export function loadLifecycle(): Promise<Lifecycle> {
  loaded ??= (async () => {
    // The bundle's zod, shared by every package in its chunks. zod reads the setting when a
    // schema is built, so it is set before the lifecycle's packages build theirs; the command's own
    // flag schemas (cli/src/options.ts, built with its module) and the exec fast path's separate
    // docker barrel keep the compiled parse, a few schemas parsed once.
    if (oneShot) (await import('zod')).config({ jitless: true });
    return import('@ca-sandbox/lifecycle');
  })();
  return loaded;
}

/**
 * The warning printed when an allowlist of addresses only (host firewall rules, EXPERIMENTAL) is
 * selected; undefined for an allowlist the egress gateway enforces. Owned by @ca-sandbox/network.
 */
export async function allowlistWarning(allow: readonly string[]): Promise<string | undefined> {
  const network = await import('@ca-sandbox/network');
  if (network.allowlistEnforcement(allow) === 'gateway') return undefined;
  // Output.warn adds its own prefix.
  return network.ALLOWLIST_WARNING.replace(/^warning:\s*/i, '');
}
