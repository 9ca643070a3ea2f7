#!/usr/bin/env node
// Publishes what `pnpm version-packages` (changeset version + the plugin's version sync) prepared:
// checks that every package carries the license and repository metadata and that the plugin has
// the cli's version, builds, then `pnpm -r publish` (workspace:^ ranges become real versions).
// --dry-run packs and reports without publishing (and without needing a clean git tree);
// --skip-build reuses dist/ (tests, after pnpm build).
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const args = process.argv.slice(2);
const dryRun = args.includes('--dry-run');
const root = fileURLToPath(new URL('..', import.meta.url));
const run = (command, argv) => execFileSync(command, argv, { cwd: root, stdio: 'inherit' });

run(process.execPath, ['scripts/package-metadata.mjs', '--check']);
run(process.execPath, ['scripts/sync-plugin-version.mjs', '--check']);
if (!args.includes('--skip-build')) run('pnpm', ['build']);
run('pnpm', ['-r', 'publish', '--access', 'public', ...(dryRun ? ['--dry-run', '--no-git-checks'] : [])]);
