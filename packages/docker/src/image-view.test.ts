import { describe, expect, it } from 'vitest';
import { IMAGE_VIEW_DIR } from './contracts.js';
import { depsSourceIn, imageViewOptions, viewEnv } from './image-view.js';
import { ImageInspectSchema, parseContainerInspect } from './inspect.js';

const image = (Name: string, Data: Record<string, string>) =>
  ImageInspectSchema.parse({ Id: 'sha256:1', GraphDriver: { Name, Data } });
const layers = {
  UpperDir: '/var/lib/docker/overlay2/top/diff',
  LowerDir: '/var/lib/docker/overlay2/mid/diff:/var/lib/docker/overlay2/base/diff',
};

describe('the overlay options of a box view of its image', () => {
  it("are the image's layers, top first, over the sandbox's upper and work volumes, nosuid and nodev", () => {
    expect(imageViewOptions(image('overlay2', layers), '/v/upper/_data', '/v/work/_data')).toEqual({
      driverOpts: {
        type: 'overlay',
        device: 'overlay',
        o: 'lowerdir=/var/lib/docker/overlay2/top/diff:/var/lib/docker/overlay2/mid/diff:/var/lib/docker/overlay2/base/diff,upperdir=/v/upper/_data,workdir=/v/work/_data,nosuid,nodev',
      },
    });
  });

  it('are not made for another storage driver, a path that would split the options, or too many layers', () => {
    expect(imageViewOptions(image('vfs', {}), '/u', '/w')).toEqual({
      reason: 'the engine stores images with vfs, not overlay2',
    });
    expect(imageViewOptions(image('overlay2', layers), '/u,upperdir=/etc', '/w')).toHaveProperty('reason');
    expect(imageViewOptions(image('overlay2', { UpperDir: '/a/b:c' }), '/u', '/w')).toHaveProperty('reason');
    expect(imageViewOptions(image('overlay2', layers), '', '/w')).toHaveProperty('reason');
    const many = Array.from({ length: 80 }, (_, n) => `/var/lib/docker/overlay2/${'x'.repeat(40)}${n}/diff`);
    expect(imageViewOptions(image('overlay2', { LowerDir: many.join(':') }), '/u', '/w')).toEqual({
      reason: 'the image has too many layers (80)',
    });
  });
});

describe("the box's environment with a view", () => {
  it('points every path under /deps at the view, and leaves the rest', () => {
    expect(
      viewEnv([
        'PATH=/deps/pm/bin:/deps/node_modules/.bin:/usr/bin',
        'NODE_PATH=/deps/node_modules',
        'VIRTUAL_ENV=/deps',
        'HOME=/tmp',
        'DEPS_NOTE=see /deps/src',
        'npm_config_nodedir=/usr/local',
        '=/deps',
      ]),
    ).toEqual({
      PATH: `${IMAGE_VIEW_DIR}/deps/pm/bin:${IMAGE_VIEW_DIR}/deps/node_modules/.bin:/usr/bin`,
      NODE_PATH: `${IMAGE_VIEW_DIR}/deps/node_modules`,
      VIRTUAL_ENV: `${IMAGE_VIEW_DIR}/deps`,
    });
  });

  it('links node_modules into the view only when the box has it mounted', () => {
    const box = (mounts: object[]) =>
      parseContainerInspect({
        Id: 'x',
        Name: '/b',
        State: { Status: 'running', Running: true },
        Config: {},
        HostConfig: {},
        Mounts: mounts,
      });
    expect(depsSourceIn(box([]))).toBe('/deps/src');
    expect(depsSourceIn(box([{ Type: 'volume', Name: 'v', Destination: IMAGE_VIEW_DIR }]))).toBe(
      `${IMAGE_VIEW_DIR}/deps/src`,
    );
  });
});

describe('the mechanism names no package (issue 28.1)', () => {
  it('image-view.ts holds no package name and no path into a package folder', async () => {
    const { readFile } = await import('node:fs/promises');
    const source = await readFile(new URL('./image-view.ts', import.meta.url), 'utf8');
    // The names the read-only fallback still lists (build's WRITABLE_PACKAGES, VITEST_TSBUILDINFO),
    // and any path below a node_modules folder.
    for (const name of ['vitest', 'vue-demi', 'node-addon-api', 'tsbuildinfo'])
      expect(source.toLowerCase()).not.toContain(name);
    expect(source).not.toMatch(/node_modules\/[@a-z]/);
  });
});
