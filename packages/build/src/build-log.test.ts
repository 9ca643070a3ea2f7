import { describe, expect, it } from 'vitest';
import { isBuilderFraming } from './build-log.js';
import { isInstallRecord } from './install-records.js';

describe('isBuilderFraming', () => {
  // Lines as the legacy builder printed them for examples/hello-node.
  it.each([
    'Sending build context to Docker daemon  5.632kB',
    'Step 3/18 : RUN ["/bin/sh","-c","mkdir -p /deps/src /work/repo && chown 1000:1000 /deps /deps/src /work/repo"]',
    'Step 12/18 : RUN ["/bin/sh","-c","set -eu\\nnpm ci --no-audit --no-fund --loglevel=error"]',
    ' ---> Running in c4f95b0ccc5b',
    ' ---> 84e658154735',
    ' ---> Using cache',
    'Removing intermediate container c4f95b0ccc5b',
    'Successfully built 6a9a827459b9',
    'Successfully tagged ca-sbx:hello-node-8572c9363fa36e7e9548c40b',
    '[Warning] One or more build-args [ALL_PROXY all_proxy] were not consumed',
    'DEPRECATED: The legacy builder is deprecated and will be removed in a future release.',
    '            BuildKit is currently disabled; enable it by removing the DOCKER_BUILDKIT=0',
    '            environment-variable.',
    '',
  ])('hides %j', (line) => {
    expect(isBuilderFraming(line)).toBe(true);
  });

  it.each([
    'added 1 package in 2s',
    'npm warn deprecated inflight@1.0.6: This module is not supported',
    'Collecting requests==2.32.3',
    'go: downloading golang.org/x/text v0.14.0',
    '> hello-node@1.0.0 postinstall',
    'up to date in 5s',
    'Step into the light',
  ])('keeps the install output %j', (line) => {
    expect(isBuilderFraming(line)).toBe(false);
  });
});

describe('install records', () => {
  it("knows the install step's records for the host, and nothing of the install's own output", () => {
    for (const line of [
      'ca-sbx-toolchain:node=22.23.5,npm=10.9.9,',
      '  ca-sandbox-confinement:;Uid: 1000 1000 1000 1000',
      'ca-sandbox-install-script: node_modules/esbuild postinstall',
      'ca-sandbox-install-fallback: legacy-peer-deps',
      'ca-sbx-root-sources node',
    ])
      expect(isInstallRecord(line), line).toBe(true);
    for (const line of ['added 12 packages in 3s', 'npm WARN deprecated x: ca-sbx-toolchain:', ''])
      expect(isInstallRecord(line), line).toBe(false);
  });
});
