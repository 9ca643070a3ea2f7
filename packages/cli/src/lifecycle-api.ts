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

/** Text printed every time the allowlist policy is selected (from @ca-sandbox/network when built). */
export async function allowlistWarning(): Promise<string> {
  try {
    const network = (await import('@ca-sandbox/network')) as { ALLOWLIST_WARNING?: unknown };
    if (typeof network.ALLOWLIST_WARNING === 'string' && network.ALLOWLIST_WARNING)
      return network.ALLOWLIST_WARNING;
  } catch {
    // network not built: fall through to our own wording.
  }
  return FALLBACK_ALLOWLIST_WARNING;
}

export const FALLBACK_ALLOWLIST_WARNING =
  'the allowlist network policy is EXPERIMENTAL: egress is filtered by host iptables rules to the listed addresses only, but DNS, shared kernel and rule races are not hardened; prefer offline or clone-then-cut for untrusted code';
