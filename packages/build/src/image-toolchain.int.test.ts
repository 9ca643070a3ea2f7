// labelImage: the tag and every label of a deps image in one LABEL step, values exactly as given.
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { dockerSync, engineReady, TEST_BASE } from '../test/real-engine.js';
import { labelImage } from './image-toolchain.js';

const BASE = TEST_BASE;
const ready = engineReady;
const docker = dockerSync;

describe.skipIf(!ready)('labelImage (real engine)', () => {
  const tag = `ca-sbx-test-label:${randomBytes(4).toString('hex')}`;
  afterAll(() => {
    try {
      docker('image', 'rm', tag);
    } catch {}
  });

  it('one step on the image, labels byte for byte (quotes, $, backslashes, spaces)', async () => {
    const baseId = docker('image', 'inspect', '--format', '{{.Id}}', BASE);
    const labels = {
      'ca.sandbox.cache': '1',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a Dockerfile variable reference, kept literal
      'ca.sandbox.cache.source': '/home/a b/"x"/$HOME/${PATH}\\y',
      'ca.sandbox.toolchain': 'node=22.23.5,npm=10.9.9',
    };
    await labelImage(baseId, tag, labels);
    const inspect = JSON.parse(docker('image', 'inspect', '--format', '{{json .}}', tag)) as {
      Parent: string;
      Config: { Labels: Record<string, string> };
    };
    expect(inspect.Parent).toBe(baseId);
    expect(inspect.Config.Labels).toMatchObject(labels);
    await expect(labelImage('ca-sbx-base:debian', tag, labels)).rejects.toThrow(/invalid image id/);
  }, 120_000);
});
