#!/usr/bin/env node
// Writes (or completes) ca-sandbox's configuration file for this machine, so that the settings
// scripts/setup.sh chose hold in every new shell, for the MCP server and for the plugin:
//   - baseImages: the local ca-sbx-base:* images (there is no registry here), for each that exists;
//   - caCertificates: the host's CA bundle, for dependency installs behind a TLS-intercepting proxy.
// Keys already in the file are kept (the user's choice wins). Needs `pnpm build` first.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

const config = await import(new URL('../packages/config/dist/index.js', import.meta.url).href);
const LOCAL_BASE_IMAGES = config.SEEDED_BASE_IMAGES;

function imageExists(image) {
  try {
    execFileSync('docker', ['image', 'inspect', '--format', '{{.Id}}', '--', image], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const { path } = config.configLocation();
const current = existsSync(path) ? config.readConfigFile({ path, source: 'env' }) : {};
const next = { ...current, baseImages: { ...current.baseImages } };
for (const [provider, image] of Object.entries(LOCAL_BASE_IMAGES)) {
  if (next.baseImages[provider] === undefined && imageExists(image)) next.baseImages[provider] = image;
}
if (next.caCertificates === undefined) {
  const bundle = [
    process.env.NODE_EXTRA_CA_CERTS,
    process.env.SSL_CERT_FILE,
    '/etc/ssl/certs/ca-certificates.crt',
  ]
    .filter(Boolean)
    .find((file) => file.startsWith('/') && existsSync(file));
  if (bundle) next.caCertificates = bundle;
}
mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
const temporary = `${path}.${process.pid}.tmp`;
writeFileSync(temporary, `${JSON.stringify(next, null, 2)}\n`, { mode: 0o600 });
renameSync(temporary, path);
// What was written must load: the same validation every command applies.
config.loadSettings({ env: { ...process.env, CA_SANDBOX_CONFIG: path } });
process.stdout.write(`${path}\n`);
