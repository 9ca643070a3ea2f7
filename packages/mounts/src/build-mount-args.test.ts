import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  buildMountArgs,
  buildMountConfig,
  buildVolumeCreateArgs,
  mountConfigArgs,
} from './build-mount-args.js';
import { BindMountRejectedError, InvalidMountError } from './errors.js';

const FORBIDDEN = [/type=bind/i, /^-v$/, /^--volume/, /^--volumes-from/, /docker\.sock/i];

function assertSafe(argv: string[]): void {
  for (const arg of argv) {
    for (const pattern of FORBIDDEN) expect(arg).not.toMatch(pattern);
  }
  for (let index = 0; index < argv.length; index += 2) {
    expect(['--mount', '--tmpfs']).toContain(argv[index]);
  }
}

describe('buildMountArgs', () => {
  it('builds a named volume mount', () => {
    expect(buildMountArgs([{ type: 'volume', source: 'ca-sbx-abc', target: '/work/repo' }])).toEqual([
      '--mount',
      'type=volume,source=ca-sbx-abc,target=/work/repo',
    ]);
  });

  it('builds a read-only volume and a hardened tmpfs', () => {
    expect(
      buildMountArgs([
        { type: 'volume', source: 'v1', target: '/work/repo', readonly: true },
        { type: 'tmpfs', target: '/tmp', size: '64m', mode: 0o1777 },
      ]),
    ).toEqual([
      '--mount',
      'type=volume,source=v1,target=/work/repo,readonly,volume-nocopy',
      '--tmpfs',
      `/tmp:noexec,nosuid,nodev,size=${64 * 1024 ** 2},mode=1777`,
    ]);
  });

  it('passes a tmpfs size in bytes: docker sizes such as 2gb or 1.5g mean nothing to the kernel', () => {
    expect(buildMountArgs([{ type: 'tmpfs', target: '/tmp', size: '1.5gb' }])).toEqual([
      '--tmpfs',
      `/tmp:noexec,nosuid,nodev,size=${1.5 * 1024 ** 3}`,
    ]);
    for (const size of ['0', '64m,uid=0', '2x', '-1'])
      expect(() => buildMountArgs([{ type: 'tmpfs', target: '/tmp', size }])).toThrow(/tmpfs size/);
  });

  it.each([
    ['type bind', { type: 'bind', source: '/etc', target: '/x' }],
    ['type BIND with spaces', { type: ' BIND ', source: 'v', target: '/x' }],
    ['absolute host source', { type: 'volume', source: '/etc', target: '/x' }],
    ['relative host source', { type: 'volume', source: './repo', target: '/x' }],
    ['nested relative source', { type: 'volume', source: 'repo/sub', target: '/x' }],
    ['home source', { type: 'volume', source: '~/secrets', target: '/x' }],
    ['parent source', { type: 'volume', source: '..', target: '/x' }],
    ['docker socket target', { type: 'volume', source: 'v', target: '/var/run/docker.sock' }],
    ['docker socket in tmpfs', { type: 'tmpfs', target: '/run/docker.sock' }],
    ['bind propagation', { type: 'volume', source: 'v', target: '/x', 'bind-propagation': 'rshared' }],
    ['volume driver options', { type: 'volume', source: 'v', target: '/x', 'volume-opt': 'o=bind' }],
    ['device option', { type: 'volume', source: 'v', target: '/x', device: '/etc' }],
    ['unknown key', { type: 'volume', source: 'v', target: '/x', extra: 1 }],
    ['npipe type', { type: 'npipe', source: 'v', target: '/x' }],
  ])('rejects %s', (_name, spec) => {
    expect(() => buildMountArgs([spec])).toThrow(BindMountRejectedError);
  });

  it.each([
    ['target with a comma', { type: 'volume', source: 'v', target: '/x,type=bind' }],
    ['relative target', { type: 'volume', source: 'v', target: 'x' }],
    ['dot-dot target', { type: 'volume', source: 'v', target: '/work/../etc' }],
    ['root target', { type: 'tmpfs', target: '/' }],
    ['odd tmpfs size', { type: 'tmpfs', target: '/tmp', size: '1g,exec' }],
    ['src instead of source', { type: 'volume', src: 'v', target: '/x' }],
  ])('refuses a malformed spec: %s', (_name, spec) => {
    expect(() => buildMountArgs([spec])).toThrow(/mount|rejected/);
  });

  it('refuses two mounts on one target and a non-array input', () => {
    expect(() =>
      buildMountArgs([
        { type: 'volume', source: 'a', target: '/x' },
        { type: 'tmpfs', target: '/x' },
      ]),
    ).toThrow(InvalidMountError);
    expect(() => buildMountArgs({ type: 'volume' })).toThrow(InvalidMountError);
  });

  it('never emits a bind, -v, --volume, --volumes-from or the docker socket, or it throws (property)', () => {
    const hostile = fc.constantFrom(
      'bind',
      'volume',
      'tmpfs',
      '/',
      '/etc',
      '~',
      '..',
      '/var/run/docker.sock',
      'docker.sock',
      'type=bind',
      '-v',
      '--volume',
      '--volumes-from',
      'a,type=bind,source=/',
      'ok',
      '/work/repo',
    );
    const text = fc.oneof(fc.string(), hostile);
    const spec = fc.record(
      {
        type: fc.oneof(hostile, fc.string()),
        source: text,
        target: text,
        readonly: fc.boolean(),
        size: text,
        'bind-propagation': text,
        'volume-opt': text,
        extra: text,
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(fc.array(fc.oneof(spec, fc.anything()), { maxLength: 4 }), (specs) => {
        let argv: string[];
        try {
          const config = buildMountConfig(specs);
          // The body form: volume mounts of plain names only, tmpfs keyed by plain targets.
          for (const mount of config.Mounts) {
            expect(Object.keys(mount).sort()).toEqual(['ReadOnly', 'Source', 'Target', 'Type']);
            expect(mount.Type).toBe('volume');
            expect(mount.Source).toMatch(/^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/);
          }
          for (const target of Object.keys(config.Tmpfs)) expect(target).not.toMatch(/docker\.sock|,|:/);
          argv = buildMountArgs(specs);
          expect(argv).toEqual(mountConfigArgs(config));
        } catch (error) {
          expect(error).toSatisfy(
            (e) => e instanceof BindMountRejectedError || e instanceof InvalidMountError,
          );
          return;
        }
        assertSafe(argv);
      }),
      { numRuns: 3000 },
    );
  });
});

describe('buildMountConfig', () => {
  it('gives the create body form of the same mounts: Mounts (volume only) and Tmpfs', () => {
    const specs = [
      { type: 'volume', source: 'v1', target: '/work/repo', readonly: true },
      { type: 'tmpfs', target: '/tmp', size: '64m', exec: true },
    ];
    expect(buildMountConfig(specs)).toEqual({
      Mounts: [
        {
          Type: 'volume',
          Source: 'v1',
          Target: '/work/repo',
          ReadOnly: true,
          VolumeOptions: { NoCopy: true, DriverConfig: {} },
        },
      ],
      Tmpfs: { '/tmp': `exec,nosuid,nodev,size=${64 * 1024 ** 2}` },
    });
    expect(mountConfigArgs(buildMountConfig(specs))).toEqual(buildMountArgs(specs));
  });

  it('copies nothing of the image into a volume mounted read-only (a box view upper the lister mounts)', () => {
    const [readOnly, writable] = buildMountConfig([
      { type: 'volume', source: 'ca-sbx_upper-abc', target: '/work/repo', readonly: true },
      { type: 'volume', source: 'ca-sbx-abc', target: '/work/other' },
    ]).Mounts;
    expect(readOnly?.VolumeOptions).toEqual({ NoCopy: true, DriverConfig: {} });
    // A writable volume still takes the image folder's owner (the box writes /work/repo).
    expect(writable && 'VolumeOptions' in writable).toBe(false);
    expect(
      buildMountArgs([{ type: 'volume', source: 'ca-sbx_upper-abc', target: '/work/repo', readonly: true }]),
    ).toEqual(['--mount', 'type=volume,source=ca-sbx_upper-abc,target=/work/repo,readonly,volume-nocopy']);
  });

  it('copies nothing into a writable volume that asks for nocopy (a repo view, created before it may mount)', () => {
    const [view] = buildMountConfig([
      { type: 'volume', source: 'ca-sbx_repo-abc', target: '/work/repo', nocopy: true },
    ]).Mounts;
    expect(view).toMatchObject({ ReadOnly: false, VolumeOptions: { NoCopy: true, DriverConfig: {} } });
    expect(
      buildMountArgs([{ type: 'volume', source: 'ca-sbx_repo-abc', target: '/work/repo', nocopy: true }]),
    ).toEqual(['--mount', 'type=volume,source=ca-sbx_repo-abc,target=/work/repo,volume-nocopy']);
  });

  it('refuses a bind in the body form too, and renders no mount type but volume', () => {
    expect(() => buildMountConfig([{ type: 'bind', source: '/etc', target: '/x' }])).toThrow(
      BindMountRejectedError,
    );
    const bind = { Type: 'bind', Source: '/etc', Target: '/x', ReadOnly: false } as unknown as {
      Type: 'volume';
      Source: string;
      Target: string;
      ReadOnly: boolean;
    };
    expect(() => mountConfigArgs({ Mounts: [bind] })).toThrow(BindMountRejectedError);
  });
});

describe('buildVolumeCreateArgs', () => {
  it('creates a labeled local volume without driver options', () => {
    const argv = buildVolumeCreateArgs('ca-sbx-abc', { 'ca.sandbox': '1', 'ca.sandbox.id': 'abc' });
    expect(argv).toEqual([
      'volume',
      'create',
      '--driver',
      'local',
      '--label',
      'ca.sandbox=1',
      '--label',
      'ca.sandbox.id=abc',
      '--',
      'ca-sbx-abc',
    ]);
    expect(argv).not.toContain('--opt');
    expect(argv).not.toContain('-o');
  });

  it('refuses path-like names and hostile labels', () => {
    expect(() => buildVolumeCreateArgs('/etc', {})).toThrow(BindMountRejectedError);
    expect(() => buildVolumeCreateArgs('--opt=device=/etc', {})).toThrow(BindMountRejectedError);
    expect(() => buildVolumeCreateArgs('v', { 'a b': 'x' })).toThrow(InvalidMountError);
    expect(() => buildVolumeCreateArgs('v', { a: 'x\ny' })).toThrow(InvalidMountError);
  });
});
