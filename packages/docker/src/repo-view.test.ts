import { describe, expect, it } from 'vitest';
import { IMAGE_VIEW_DIR, RAW_REPO_DIR, REPO_DIR } from './contracts.js';
import { ImageInspectSchema, parseContainerInspect } from './inspect.js';
import { DEPS_VIEW_LABEL_VALUE, LABEL_CACHE_BUILDER, LABEL_DEPS_VIEW } from './labels.js';
import { hasRepoView, repoViewMatches, repoViewOptions, viewEnvFor } from './repo-view.js';

const image = (
  Name: string,
  Data: Record<string, string>,
  labels: Record<string, string> = {
    [LABEL_DEPS_VIEW]: DEPS_VIEW_LABEL_VALUE,
    [LABEL_CACHE_BUILDER]: 'builtin',
  },
) =>
  ImageInspectSchema.parse({
    Id: 'sha256:1',
    GraphDriver: { Name, Data },
    Config: { Env: [], Labels: labels },
  });
const layers = {
  UpperDir: '/var/lib/docker/overlay2/top/diff',
  LowerDir: '/var/lib/docker/overlay2/mid/diff:/var/lib/docker/overlay2/base/diff',
};

describe('the overlay options of a repo view', () => {
  it("are the install layer's /deps/src alone under the sandbox's own volume, nosuid, nodev, no redirects, metacopy or index", () => {
    expect(repoViewOptions(image('overlay2', layers), '/v/ca-sbx-x/_data', '/v/rwork/_data')).toEqual({
      driverOpts: {
        type: 'overlay',
        device: 'overlay',
        o: 'lowerdir=/var/lib/docker/overlay2/top/diff/deps/src,upperdir=/v/ca-sbx-x/_data,workdir=/v/rwork/_data,nosuid,nodev,redirect_dir=nofollow,metacopy=off,index=off',
      },
    });
  });

  it('are not made for an image built without the label, another driver, or a path that would split the options', () => {
    expect(repoViewOptions(image('overlay2', layers, {}), '/u', '/w')).toEqual({
      reason: 'its deps image was not built for a repo view (an older image, or not a node install)',
    });
    expect(repoViewOptions(image('overlay2', layers, { [LABEL_DEPS_VIEW]: '1' }), '/u', '/w')).toHaveProperty(
      'reason',
    );
    // Another builder's image (nixpacks: its layer was never checked), even with the label.
    expect(
      repoViewOptions(
        image('overlay2', layers, {
          [LABEL_DEPS_VIEW]: DEPS_VIEW_LABEL_VALUE,
          [LABEL_CACHE_BUILDER]: 'nixpacks',
        }),
        '/u',
        '/w',
      ),
    ).toHaveProperty('reason');
    expect(repoViewOptions(image('vfs', layers), '/u', '/w')).toEqual({
      reason: 'the engine stores images with vfs, not overlay2',
    });
    expect(repoViewOptions(image('overlay2', layers), '/u,lowerdir=/', '/w')).toHaveProperty('reason');
    expect(repoViewOptions(image('overlay2', { UpperDir: '/a:b' }), '/u', '/w')).toHaveProperty('reason');
    // No install layer named: never a lowerdir of the host's own /deps/src.
    expect(repoViewOptions(image('overlay2', {}), '/u', '/w')).toHaveProperty('reason');
    expect(repoViewOptions(image('overlay2', { UpperDir: '' }), '/u', '/w')).toHaveProperty('reason');
    expect(repoViewOptions(image('overlay2', layers), '', '/w')).toHaveProperty('reason');
  });
});

describe("the box's environment with a repo view", () => {
  it('names the deps under /work/repo (one instance), the rest of /deps through the image view when there is one', () => {
    const env = [
      'PATH=/deps/pm/bin:/deps/node_modules/.bin:/deps/src/node_modules/.bin:/usr/bin',
      'NODE_PATH=/deps/node_modules',
      'HOME=/tmp',
      'npm_config_nodedir=/usr/local',
      'DEPS_NOTE=see /deps/src',
    ];
    expect(viewEnvFor(env, true)).toEqual({
      PATH: `${IMAGE_VIEW_DIR}/deps/pm/bin:${REPO_DIR}/node_modules/.bin:${REPO_DIR}/node_modules/.bin:/usr/bin`,
      NODE_PATH: `${REPO_DIR}/node_modules`,
    });
    expect(viewEnvFor(env, false)).toEqual({
      PATH: `/deps/pm/bin:${REPO_DIR}/node_modules/.bin:${REPO_DIR}/node_modules/.bin:/usr/bin`,
      NODE_PATH: `${REPO_DIR}/node_modules`,
    });
    // A path that only starts like one of ours is not moved.
    expect(viewEnvFor(['X=/deps/srcx:/deps/node_modules2'], false)).toEqual({
      X: '/deps/srcx:/deps/node_modules2',
    });
  });
});

describe('a repo view as the gate sees it', () => {
  it('is a box with a volume at RAW_REPO_DIR', () => {
    const box = (mounts: object[]) =>
      parseContainerInspect({
        Id: 'x',
        Name: '/b',
        State: { Status: 'running', Running: true },
        Config: {},
        HostConfig: {},
        Mounts: mounts,
      });
    expect(
      hasRepoView(box([{ Type: 'volume', Name: 'ca-sbx-x', Destination: RAW_REPO_DIR, RW: false }])),
    ).toBe(true);
    expect(hasRepoView(box([{ Type: 'volume', Name: 'ca-sbx-x', Destination: REPO_DIR, RW: true }]))).toBe(
      false,
    );
  });

  it('matches only its own view, options derived again, its own volume read-only beside', () => {
    const o = { type: 'overlay', device: 'overlay', o: 'lowerdir=/l,upperdir=/u,workdir=/w' };
    const facts = {
      mounted: 'ca-sbx_repo-x',
      expected: 'ca-sbx_repo-x',
      driver: 'local',
      options: o,
      derived: { driverOpts: o },
      raw: { mounted: 'ca-sbx-x', own: true, readOnly: true },
    };
    expect(repoViewMatches(facts)).toBe(true);
    expect(repoViewMatches({ ...facts, mounted: 'ca-sbx_repo-y' })).toBe(false);
    expect(repoViewMatches({ ...facts, options: { ...o, o: 'lowerdir=/,upperdir=/u,workdir=/w' } })).toBe(
      false,
    );
    expect(repoViewMatches({ ...facts, derived: { reason: 'the image is gone' } })).toBe(false);
    expect(repoViewMatches({ ...facts, raw: { ...facts.raw, readOnly: false } })).toBe(false);
    expect(repoViewMatches({ ...facts, raw: { ...facts.raw, own: false } })).toBe(false);
    expect(repoViewMatches({ ...facts, driver: 'other' })).toBe(false);
  });
});

describe('the mechanism names no package (issue 28.1, 28.5)', () => {
  it('repo-view.ts holds no package name and no path into a package folder', async () => {
    const { readFile } = await import('node:fs/promises');
    const source = await readFile(new URL('./repo-view.ts', import.meta.url), 'utf8');
    for (const name of ['vitest', 'vue-demi', 'node-addon-api', 'tsbuildinfo'])
      expect(source).not.toMatch(new RegExp(`\\b${name}\\b`));
    expect(source).not.toMatch(/node_modules\/[a-z@]/);
  });
});
