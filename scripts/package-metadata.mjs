#!/usr/bin/env node
// Every published package carries the same license file and points back to the repository:
// `repository` (with its directory), `homepage`, `bugs`, `license`, copied from the root
// package.json and LICENSE (their one home). `--check` only compares (exit 1 on drift); the
// release runs it before publishing. An optional directory argument names another checkout.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const args = process.argv.slice(2);
const check = args.includes('--check');
const root = resolve(args.find((arg) => !arg.startsWith('--')) ?? new URL('..', import.meta.url).pathname);
const rootPkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const license = readFileSync(join(root, 'LICENSE'), 'utf8');
const url = rootPkg.repository?.url;
if (typeof url !== 'string' || !url.startsWith('git+https://')) {
  process.stderr.write('error: the root package.json needs repository.url (git+https://...)\n');
  process.exit(1);
}
const web = url.replace(/^git\+/, '').replace(/\.git$/, '');
const drift = [];
for (const name of readdirSync(join(root, 'packages')).sort()) {
  const dir = join(root, 'packages', name);
  let text;
  try {
    text = readFileSync(join(dir, 'package.json'), 'utf8');
  } catch {
    continue;
  }
  const pkg = JSON.parse(text);
  if (pkg.private) continue;
  const wanted = {
    license: rootPkg.license,
    repository: { type: 'git', url, directory: `packages/${name}` },
    homepage: `${web}/tree/main/packages/${name}#readme`,
    bugs: { url: `${web}/issues` },
  };
  const updated = { ...pkg, ...wanted };
  // Keep the usual order: the metadata right after the description.
  const ordered = {};
  for (const [key, value] of Object.entries(updated)) {
    if (key in wanted && key !== 'license') continue;
    ordered[key] = value;
    if (key === 'license') Object.assign(ordered, wanted);
  }
  const next = `${JSON.stringify(ordered, null, 2)}\n`;
  if (next !== text) {
    drift.push(`packages/${name}/package.json`);
    if (!check) writeFileSync(join(dir, 'package.json'), next);
  }
  let current = '';
  try {
    current = readFileSync(join(dir, 'LICENSE'), 'utf8');
  } catch {
    // missing
  }
  if (current !== license) {
    drift.push(`packages/${name}/LICENSE`);
    if (!check) writeFileSync(join(dir, 'LICENSE'), license);
  }
}
if (check && drift.length > 0) {
  process.stderr.write(
    `error: package metadata differs from the root in ${drift.join(', ')} (run node scripts/package-metadata.mjs)\n`,
  );
  process.exit(1);
}
process.stdout.write(drift.length > 0 ? `updated ${drift.join(', ')}\n` : 'package metadata in sync\n');
