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

let loaded: Promise<Lifecycle> | undefined;

/** The lifecycle package, imported on first use. */
export function loadLifecycle(): Promise<Lifecycle> {
  loaded ??= import('@ca-sandbox/lifecycle');
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
