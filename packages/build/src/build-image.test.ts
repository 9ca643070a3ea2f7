import { describe, expect, it } from 'vitest';
import { committingLine } from './build-image.js';

describe('committingLine', () => {
  it('says what the build waits for after the install, with the layer size once a look saw it', () => {
    expect(committingLine(700 * 1024 * 1024)).toBe(
      "the install is done (700 MiB written): docker is saving it as the deps image's layer (later creates of this checkout start from it)",
    );
    expect(committingLine(0)).toMatch(/^the install is done: docker is saving it/);
  });
});
