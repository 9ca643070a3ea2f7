import { GIT_MODES as LIFECYCLE_GIT_MODES } from '@ca-sandbox/lifecycle';
import { describe, expect, it } from 'vitest';
import { GIT_MODES } from './constants.js';

describe('constants copied from the lifecycle (the CLI must not load it for --help)', () => {
  it('copy-out git modes', () => {
    expect(GIT_MODES).toEqual(LIFECYCLE_GIT_MODES);
  });
});
