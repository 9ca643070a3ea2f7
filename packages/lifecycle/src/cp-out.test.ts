import { afterEach, describe, expect, it } from 'vitest';
import { cpOut } from './cp-out.js';
import { UnsupportedHostError } from './errors.js';

const platform = Object.getOwnPropertyDescriptor(process, 'platform');

afterEach(() => {
  if (platform) Object.defineProperty(process, 'platform', platform);
});

describe('cpOut on a windows host', () => {
  it('refuses before anything runs: the extractor checks POSIX paths only', async () => {
    Object.defineProperty(process, 'platform', { value: 'win32', configurable: true });
    const error = await cpOut('sbx-any', 'file.txt', 'C:\\out\\file.txt').then(
      () => new Error('copied'),
      (caught: unknown) => caught as Error,
    );
    expect(error).toBeInstanceOf(UnsupportedHostError);
    expect(error).toMatchObject({ code: 'UNSUPPORTED_HOST', kind: 'prerequisite' });
    expect(error.message).toBe('copying out of a sandbox is not supported on windows hosts');
  });
});
