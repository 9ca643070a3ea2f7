#!/usr/bin/env node
// The Claude Code plugin ships the CLI's operations, so it carries the CLI's version: after
// `changeset version` bumps packages/cli/package.json, this copies that version into the plugin's
// manifest and the marketplace entry (pnpm version-packages runs both). `--check` only compares
// (exit 1 when they differ). An optional directory argument names another checkout (tests).
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const args = process.argv.slice(2);
const check = args.includes('--check');
const root = resolve(args.find((arg) => !arg.startsWith('--')) ?? new URL('..', import.meta.url).pathname);
const { version } = JSON.parse(readFileSync(join(root, 'packages/cli/package.json'), 'utf8'));
if (!/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/.test(version ?? '')) {
  process.stderr.write(
    `error: packages/cli/package.json has no usable version: ${JSON.stringify(version)}\n`,
  );
  process.exit(1);
}
// Text replacement keeps each file's formatting; each holds exactly one version key (the plugin's).
const targets = ['plugin/.claude-plugin/plugin.json', '.claude-plugin/marketplace.json'];
const VERSION_KEY = /("version"\s*:\s*)"[^"]*"/g;
const stale = [];
for (const path of targets) {
  const text = readFileSync(join(root, path), 'utf8');
  const keys = text.match(VERSION_KEY) ?? [];
  if (keys.length !== 1) {
    process.stderr.write(`error: ${path} should hold exactly one "version" key, has ${keys.length}\n`);
    process.exit(1);
  }
  const updated = text.replace(VERSION_KEY, `$1${JSON.stringify(version)}`);
  JSON.parse(updated);
  if (updated === text) continue;
  stale.push(path);
  if (!check) writeFileSync(join(root, path), updated);
}
if (check && stale.length > 0) {
  process.stderr.write(
    `error: plugin version differs from the cli's ${version} in ${stale.join(', ')} (run node scripts/sync-plugin-version.mjs)\n`,
  );
  process.exit(1);
}
process.stdout.write(
  `plugin version ${version}${stale.length > 0 ? ` (updated ${stale.join(', ')})` : ''}\n`,
);
