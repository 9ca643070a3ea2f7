import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { limitFrom } from './_utils.js';

/** A start the test settles by hand (the checkout's word). */
function deferred(): { start: Promise<boolean>; settle: (value: boolean) => void } {
  let settle: (value: boolean) => void = () => {};
  const start = new Promise<boolean>((resolve) => {
    settle = resolve;
  });
  return { start, settle };
}

describe('limitFrom (a time limit that starts when its start settles)', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('does not run while the start is pending, then runs its full time after it settles', async () => {
    const { start, settle } = deferred();
    const onExpire = vi.fn();
    const limit = limitFrom(start, 1000, onExpire);
    await vi.advanceTimersByTimeAsync(5000);
    expect(onExpire).not.toHaveBeenCalled();
    settle(true);
    await vi.advanceTimersByTimeAsync(999);
    expect(onExpire).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(1);
    expect(onExpire).toHaveBeenCalledTimes(1);
    expect(limit.expired).toBe(true);
  });

  it('starts on a rejected start too, and at once without one', async () => {
    const onRejected = vi.fn();
    limitFrom(Promise.reject(new Error('clone failed')), 10, onRejected);
    const onNow = vi.fn();
    limitFrom(undefined, 10, onNow);
    await vi.advanceTimersByTimeAsync(10);
    expect(onRejected).toHaveBeenCalledTimes(1);
    expect(onNow).toHaveBeenCalledTimes(1);
  });

  it('cleared before its start settles, it never arms (no timer outlives the work)', async () => {
    const { start, settle } = deferred();
    const onExpire = vi.fn();
    const limit = limitFrom(start, 10, onExpire);
    limit.clear();
    settle(true);
    await vi.advanceTimersByTimeAsync(100);
    expect(onExpire).not.toHaveBeenCalled();
    expect(limit.expired).toBe(false);
    expect(vi.getTimerCount()).toBe(0);
  });
});
