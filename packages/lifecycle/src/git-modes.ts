/**
 * How copy-out treats git directories from the box (see git-guard.ts). Exported from the index;
 * the CLI keeps a copy for its help (it must not load the lifecycle), checked equal by a test.
 * - `withhold` (default): every git directory and `.git` file is left out and reported.
 * - `sanitized`: git directories are rebuilt from an allowlist (objects, refs, HEAD, index...)
 *   with a minimal config written by us, no hooks and no exec bits; `.git` files still withheld.
 */
export const GIT_MODES = ['withhold', 'sanitized'] as const;
export type GitMode = (typeof GIT_MODES)[number];
