// A sandbox's hold on its view volumes, against the real engine: what it keeps in use, and that
// it never makes a volume of its own (an unlabeled one that no destroy or prune would find).
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { sandboxNames } from './contracts.js';
import { engine } from './engine.js';
import { ImageViewError } from './errors.js';
import { holdVolumes } from './inert-container.js';

const id = `sbx-${randomUUID().slice(0, 8)}`;
const labels = { 'ca.sandbox': '1', 'ca.sandbox.id': id };
const names = sandboxNames(id);
const image = 'ca-sbx-base:debian';

afterAll(async () => {
  await engine.container.remove(names.hold, { force: true });
  for (const name of [names.imageView.upper, names.imageView.work, names.repoView.work])
    await engine.volume.remove(name).catch(() => false);
});

describe('holdVolumes', () => {
  it('keeps the named volumes in use with a container that never starts', async () => {
    const held = [names.imageView.upper, names.imageView.work];
    for (const name of held) await engine.volume.create(name, { labels });
    await holdVolumes(id, image, held, labels);
    const hold = await engine.container.inspect(names.hold);
    expect(hold.State.Running).toBe(false);
    expect(hold.State.StartedAt?.startsWith('0001-01-01')).toBe(true);
    expect(hold.Config.Labels['ca.sandbox.role']).toBe('hold');
    // Should anyone start it: the box's confinement, not the image's defaults.
    expect(hold.Config.User).toBe('1000:1000');
    expect(hold.HostConfig).toMatchObject({
      Privileged: false,
      CapDrop: ['ALL'],
      ReadonlyRootfs: true,
      NetworkMode: 'none',
      SecurityOpt: ['no-new-privileges'],
    });
    expect(hold.Mounts.every((mount) => mount.Type === 'volume')).toBe(true);
    expect(hold.Mounts.map((mount) => [mount.Name, mount.RW])).toEqual(
      expect.arrayContaining(held.map((name) => [name, false])),
    );
    for (const name of held) await expect(engine.volume.remove(name)).rejects.toThrow(/in use/);
    await engine.container.remove(names.hold, { force: true });
    for (const name of held) expect(await engine.volume.remove(name)).toBe(true);
  });

  it('refuses a volume that is gone or not the sandbox’s own, and makes none', async () => {
    await engine.volume.create(names.imageView.upper, { labels });
    await engine.volume.create(names.imageView.work, {
      labels: { 'ca.sandbox': '1', 'ca.sandbox.id': `${id}-x` },
    });
    await expect(
      holdVolumes(id, image, [names.imageView.upper, names.imageView.work, names.repoView.work], labels),
    ).rejects.toBeInstanceOf(ImageViewError);
    expect(await engine.container.find(names.hold)).toBeUndefined();
    expect(await engine.volume.find(names.repoView.work)).toBeUndefined();
  });
});
