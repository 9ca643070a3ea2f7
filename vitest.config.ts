import { existsSync } from 'node:fs';
import { defineConfig } from 'vitest/config';

// Integration tests talk to the real Docker engine; Ryuk's image cannot be pulled here.
process.env.TESTCONTAINERS_RYUK_DISABLED ??= 'true';
// No registry here: the official base images are stood in for by scripts/seed-images.sh.
process.env.CA_SANDBOX_BASE_IMAGE_NODE ??= 'ca-sbx-base:node';
process.env.CA_SANDBOX_BASE_IMAGE_PYTHON ??= 'ca-sbx-base:python';
process.env.CA_SANDBOX_BASE_IMAGE_GO ??= 'ca-sbx-base:go';
process.env.CA_SANDBOX_BASE_IMAGE_PLAIN ??= 'ca-sbx-base:debian';
// Where egress goes through a TLS-intercepting proxy, npm inside a build needs the host's CAs.
const hostCaBundle = [
  process.env.NODE_EXTRA_CA_CERTS,
  process.env.SSL_CERT_FILE,
  '/etc/ssl/certs/ca-certificates.crt',
].find((file) => file && existsSync(file));
if (hostCaBundle) process.env.CA_SANDBOX_CA_CERTS ??= hostCaBundle;

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['packages/*/src/**/*.test.ts', 'packages/*/test/**/*.test.ts'],
          exclude: ['**/*.int.test.ts', '**/node_modules/**', '**/dist/**', '**/fixtures/**'],
          // They run beside the integration project on two cores: a unit test that starts the bin
          // or imports the lifecycle can take seconds of wall time when the engine is busy.
          testTimeout: 30_000,
        },
      },
      {
        test: {
          name: 'integration',
          include: ['packages/*/src/**/*.int.test.ts', 'packages/*/test/**/*.int.test.ts'],
          exclude: ['**/node_modules/**', '**/dist/**', '**/fixtures/**'],
          testTimeout: 240_000,
          hookTimeout: 240_000,
          // Two cores: more files at once only makes the engine the bottleneck.
          maxWorkers: 2,
        },
      },
    ],
  },
});
