/** Claude Code in a box (`--with-claude`): what is installed, from where, and where it goes. */

/** The npm package of Claude Code (`--with-claude`), installed from the npm registry (or the npm mirror). */
export const CLAUDE_CODE_PACKAGE = '@anthropic-ai/claude-code';
/** The pinned version: the one place to change it (it is part of the deps cache key). */
export const CLAUDE_CODE_VERSION = '2.1.332';
/** Where the box finds it: a system directory, first on the shell's PATH, owned by root. */
export const CLAUDE_CODE_BIN = '/usr/local/bin/claude';
/** The cache key part of an image with Claude Code (see computeDepHash's addOns). */
export const CLAUDE_CODE_ADDON = `claude-code@${CLAUDE_CODE_VERSION}`;
/** Labels Claude Code images: `prune --images` removes them with the other cache images. */
export const LABEL_CLAUDE_CODE = 'ca.sandbox.cache.claude-code';

/** Where the Claude Code image installs the package (never part of a box image: only its binary is copied). */
export const CLAUDE_STAGE_PREFIX = '/opt/ca-sbx-claude';
/**
 * The native binary: the package's postinstall puts the platform build (an optional dependency,
 * chosen by npm for this machine's os, cpu and libc) over this placeholder. It needs no node.
 */
export const CLAUDE_CODE_STAGE_BINARY = `${CLAUDE_STAGE_PREFIX}/lib/node_modules/${CLAUDE_CODE_PACKAGE}/bin/claude.exe`;

/**
 * The image's settings for Claude Code: it cannot update itself (root's binary, no registry) and
 * its non-essential traffic (telemetry, error reports) would only be refused by the gateway.
 */
export const CLAUDE_CODE_ENV: readonly { name: string; value: string }[] = [
  { name: 'DISABLE_AUTOUPDATER', value: '1' },
  { name: 'CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC', value: '1' },
];
