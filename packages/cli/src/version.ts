import { readFileSync } from 'node:fs';

/** The package version, from package.json (dist/ or dist/bundle/ are one or two levels below it). */
export function cliVersion(): string {
  for (const candidate of ['../package.json', '../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(candidate, import.meta.url), 'utf8')) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === 'ca-sandbox' && pkg.version) return pkg.version;
    } catch {
      // not at this level
    }
  }
  return '0.0.0-unknown';
}
