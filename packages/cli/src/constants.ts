// Kept apart from options.ts so that building the commander program does not load zod.
export const NETWORK_POLICIES = ['offline', 'clone-then-cut', 'allowlist'] as const;
export const BUILDERS = ['auto', 'builtin', 'nixpacks'] as const;
export const RUNTIMES = ['runc', 'runsc'] as const;
/** Copy-out's git modes, as @ca-sandbox/lifecycle's GIT_MODES (a unit test keeps them equal). */
export const GIT_MODES = ['withhold', 'sanitized'] as const;
export type GitMode = (typeof GIT_MODES)[number];

/** Sandbox ids as @ca-sandbox/lifecycle names them. */
export const SANDBOX_ID = /^[a-z0-9][a-z0-9_.-]{0,62}$/;
