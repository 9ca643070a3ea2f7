// Kept apart from options.ts so that building the commander program does not load zod.
export const NETWORK_POLICIES = ['offline', 'clone-then-cut', 'allowlist'] as const;
export const BUILDERS = ['auto', 'builtin', 'nixpacks'] as const;
export const RUNTIMES = ['runc', 'runsc'] as const;

/** Sandbox ids as @ca-sandbox/lifecycle names them. */
export const SANDBOX_ID = /^[a-z0-9][a-z0-9_.-]{0,62}$/;
