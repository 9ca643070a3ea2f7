/**
 * How copy-out treats git directories from the box (see git-guard.ts). Its own light module so
 * that the CLI can offer the choices without loading the lifecycle.
 * - `withhold` (default): every git directory and `.git` file is left out and reported.
 * - `sanitized`: git directories are rebuilt from an allowlist (objects, refs, HEAD, index...)
 *   with a minimal config written by us, no hooks and no exec bits; `.git` files still withheld.
 */
export const GIT_MODES = ['withhold', 'sanitized'] as const;
export type GitMode = (typeof GIT_MODES)[number];
