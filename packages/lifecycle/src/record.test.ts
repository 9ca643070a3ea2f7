import { parseContainerInspect } from '@ca-sandbox/docker';
import { describe, expect, it } from 'vitest';
import { recordFromInspect, sandboxRecordLabels } from './record.js';

describe('recordFromInspect', () => {
  it('reads the whole record from labels, image, mounts and state', () => {
    const inspect = parseContainerInspect({
      Id: 'abc',
      Name: '/ca-sbx-demo',
      Created: '2026-01-01T00:00:00Z',
      State: { Status: 'running', Running: true },
      Config: {
        Image: 'ca-sbx:demo-123',
        Labels: {
          'ca.sandbox': '1',
          'ca.sandbox.id': 'demo',
          'ca.sandbox.repo': 'demo',
          'ca.sandbox.policy': 'clone-then-cut',
          'ca.sandbox.created': '2026-01-02T03:04:05.000Z',
          'ca.sandbox.source': 'https://example.com/demo.git',
          'ca.sandbox.runtime': 'runsc',
          ...sandboxRecordLabels({
            imageCacheHit: true,
            dephash: '123',
            builder: 'builtin',
            provider: 'node',
            depsInstalled: true,
            imageSource: 'https://example.com/demo.git',
            toolchain: { node: '22.23.5', npm: '10.9.9' },
            installFallbacks: ['npm-legacy-peer-deps'],
          }),
        },
      },
      HostConfig: {},
      Mounts: [{ Type: 'volume', Name: 'ca-sbx-demo', Destination: '/work/repo' }],
    });
    expect(recordFromInspect(inspect)).toEqual({
      id: 'demo',
      container: 'ca-sbx-demo',
      volume: 'ca-sbx-demo',
      image: 'ca-sbx:demo-123',
      imageCacheHit: true,
      imageSource: 'https://example.com/demo.git',
      dephash: '123',
      builder: 'builtin',
      provider: 'node',
      depsInstalled: true,
      toolchain: { node: '22.23.5', npm: '10.9.9' },
      network: 'clone-then-cut',
      runtime: 'runsc',
      repo: 'demo',
      source: 'https://example.com/demo.git',
      status: 'running',
      createdAt: '2026-01-02T03:04:05.000Z',
      egress: [],
      allow: [],
      withClaude: false,
      installFallbacks: ['npm-legacy-peer-deps'],
      credentials: [],
    });
  });
});
