import { afterEach, describe, expect, it } from 'vitest';
import { Interrupt } from './interrupt.js';

describe('Interrupt', () => {
  let interrupt: Interrupt | undefined;
  afterEach(() => interrupt?.dispose());

  it('abort: the first signal aborts and sets 130/143, the second exits at once', () => {
    const exits: number[] = [];
    interrupt = new Interrupt('abort', (code) => exits.push(code));
    expect(interrupt.exitCode).toBeUndefined();
    process.emit('SIGTERM', 'SIGTERM');
    expect(interrupt.signal.aborted).toBe(true);
    expect(interrupt.exitCode).toBe(143);
    expect(exits).toEqual([]);
    process.emit('SIGINT', 'SIGINT');
    expect(exits).toEqual([143]);
  });

  it('exit: nothing to clean up, exits with 130 on SIGINT', () => {
    const exits: number[] = [];
    interrupt = new Interrupt('exit', (code) => exits.push(code));
    process.emit('SIGINT', 'SIGINT');
    expect(exits).toEqual([130]);
  });

  it('none and dispose leave the process handlers as they were', () => {
    const before = process.listenerCount('SIGINT');
    interrupt = new Interrupt('none');
    expect(process.listenerCount('SIGINT')).toBe(before);
    const abort = new Interrupt('abort', () => {});
    expect(process.listenerCount('SIGINT')).toBe(before + 1);
    abort.dispose();
    expect(process.listenerCount('SIGINT')).toBe(before);
  });
});
