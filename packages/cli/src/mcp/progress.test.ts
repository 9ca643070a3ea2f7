import { afterEach, describe, expect, it, vi } from 'vitest';
import { CreateProgress, type ProgressParams } from './progress.js';

/** close() waits a little after the last notification (see there): let fake time pass. */
async function closed(progress: CreateProgress): Promise<void> {
  const closing = progress.close();
  await vi.advanceTimersByTimeAsync(100);
  await closing;
}

describe('CreateProgress', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('sends phases at once, throttles log lines, escapes and caps them, and only counts up', async () => {
    vi.useFakeTimers();
    const sent: ProgressParams[] = [];
    const progress = new CreateProgress(async (params) => void sent.push(params), 'tok', {
      minIntervalMs: 500,
      heartbeatMs: 60_000,
    });
    progress.onPhase({ phase: 'build', status: 'start', detail: 'ca-sbx:x' });
    progress.onLog('first');
    progress.onLog('second');
    progress.onLog('third \u001b]52;c;aGk=\u0007 x'.padEnd(1000, 'y'));
    await vi.advanceTimersByTimeAsync(600);
    progress.onPhase({ phase: 'build', status: 'done' });
    await closed(progress);
    const messages = sent.map((p) => p.message ?? '');
    expect(messages[0]).toBe('build start: ca-sbx:x');
    // The lines within one interval collapse into the latest.
    expect(messages.filter((m) => m.startsWith('build: '))).toEqual([
      expect.stringMatching(/^build: third /),
    ]);
    const hostile = messages.find((m) => m.includes('third')) ?? '';
    expect(hostile).not.toContain('\u001b');
    expect(hostile).not.toContain('\u0007');
    expect(hostile.length).toBeLessThanOrEqual(301);
    expect(messages.at(-1)).toBe('build done');
    expect(sent.map((p) => p.progress)).toEqual(sent.map((_, i) => i + 1));
    expect(sent.every((p) => p.progressToken === 'tok' && p.total === undefined)).toBe(true);
  });

  it('a line held back by the throttle goes out under the phase that printed it', async () => {
    vi.useFakeTimers();
    const sent: ProgressParams[] = [];
    const progress = new CreateProgress(async (params) => void sent.push(params), 'tok', {
      minIntervalMs: 500,
      heartbeatMs: 60_000,
    });
    progress.onPhase({ phase: 'build', status: 'start' });
    progress.onPhase({ phase: 'build', status: 'done' });
    progress.onLog('offline: no dependency install');
    progress.onPhase({ phase: 'run', status: 'start' });
    await closed(progress);
    expect(sent.map((p) => p.message)).toEqual([
      'build start',
      'build done',
      'build: offline: no dependency install',
      'run start',
    ]);
  });

  it('sends a heartbeat while nothing else happens (a quiet install)', async () => {
    vi.useFakeTimers();
    const sent: ProgressParams[] = [];
    const progress = new CreateProgress(async (params) => void sent.push(params), 1, { heartbeatMs: 5_000 });
    progress.onPhase({ phase: 'build', status: 'start' });
    await vi.advanceTimersByTimeAsync(16_000);
    await closed(progress);
    const beats = sent.filter((p) => /still running/.test(p.message ?? ''));
    expect(beats.length).toBe(3);
    expect(beats[0]?.message).toBe('build: still running (5s)');
  });
});
