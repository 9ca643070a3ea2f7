import { describe, expect, it } from 'vitest';
import { LimitError } from './errors.js';
import { checkLimits, fitToEngine } from './limits.js';

const ENGINE = { cpus: 2, memTotalBytes: 25_275_953_152 };
const GiB = 1024 ** 3;

describe('checkLimits', () => {
  it('takes every size docker takes (2gb was refused before)', () => {
    for (const memory of ['2gb', '2GiB', '1.5g', '512 m', '6m', '6291456'])
      expect(() => checkLimits({ memory })).not.toThrow();
  });

  it.each([
    [{ memory: '1k' }, "memory 1k is below docker's minimum of 6 MiB"],
    [{ memory: '5m' }, "memory 5m is below docker's minimum of 6 MiB"],
    [
      { memory: '2x' },
      "memory '2x' is not a number with an optional unit b, k, m, g or t (e.g. 512m, 2g, 2gb, 1.5g)",
    ],
    [{ cpus: 0 }, "cpus 0 is below docker's minimum of 0.01"],
    [{ cpus: Number.NaN }, "cpus NaN is below docker's minimum of 0.01"],
    [{ pids: 8 }, 'pids 8 is not a whole number from 16 to 1000000'],
    [{ pids: 16.5 }, 'pids 16.5 is not a whole number from 16 to 1000000'],
  ])('%j: %s', (limits, message) => {
    const error = (() => {
      try {
        checkLimits(limits);
      } catch (caught) {
        return caught;
      }
    })();
    expect(error).toBeInstanceOf(LimitError);
    expect((error as LimitError).message).toBe(message);
    expect((error as LimitError).kind).toBe('usage');
    expect((error as LimitError).option).toBe(Object.keys(limits)[0]);
  });
});

describe('fitToEngine', () => {
  const chosen = { memory: true, cpus: true };

  it('refuses chosen values the engine cannot give, naming the value and the limit', () => {
    expect(() => fitToEngine({ memory: '100000g', cpus: 1, pids: 512 }, chosen, ENGINE)).toThrow(
      "memory 100000g is more than the docker engine's memory (23.5 GiB)",
    );
    expect(() => fitToEngine({ memory: '2g', cpus: 99, pids: 512 }, chosen, ENGINE)).toThrow(
      "cpus 99 is more than the docker engine's 2 cpus",
    );
  });

  it('keeps what fits, the engine maximum included', () => {
    expect(fitToEngine({ memory: '23g', cpus: 2, pids: 512 }, chosen, ENGINE)).toEqual({
      memory: '23g',
      cpus: 2,
      pids: 512,
    });
  });

  it('lowers defaults to a small engine instead of refusing them', () => {
    const small = { cpus: 1, memTotalBytes: GiB };
    expect(fitToEngine({ memory: '2g', cpus: 2, pids: 512 }, { memory: false, cpus: false }, small)).toEqual({
      memory: String(GiB),
      cpus: 1,
      pids: 512,
    });
  });

  it('checks nothing the engine does not report', () => {
    const limits = { memory: '100000g', cpus: 99, pids: 512 };
    expect(fitToEngine(limits, chosen, { cpus: 0, memTotalBytes: 0 })).toEqual(limits);
  });
});
