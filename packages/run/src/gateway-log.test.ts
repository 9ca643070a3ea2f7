import { describe, expect, it } from 'vitest';
import { GATEWAY_LOG_CUT, GATEWAY_LOG_CUT_LINE, gatewayLogEntries } from './gateway.js';

const line = (seconds: number, result: string, destination: string) =>
  `${seconds}.000 12 ${result} CONNECT ${destination} 10.0.0.2\n`;

describe('gatewayLogEntries', () => {
  it('reads a whole log as it is', () => {
    const text = line(1700000000, 'TCP_TUNNEL/200', 'registry.npmjs.org:443');
    expect(gatewayLogEntries(text, false)).toEqual([
      expect.objectContaining({ allowed: true, destination: 'registry.npmjs.org:443' }),
    ]);
  });

  it('a log cut at the cap loses its partial last line and ends with an entry that says so', () => {
    const text = `${line(1700000000, 'TCP_TUNNEL/200', 'registry.npmjs.org:443')}1700000001.000 12 TCP_TUNNEL/200 CONNECT evil.exa`;
    const before = new Date().toISOString();
    const entries = gatewayLogEntries(text, true);
    expect(entries.map((entry) => entry.destination)).toEqual(['registry.npmjs.org:443', GATEWAY_LOG_CUT]);
    const cut = entries.at(-1);
    // A refusal (sorts first in a summary, never read as a place reached), timed at the read, so a
    // filter by the box's start time keeps it.
    expect(cut).toMatchObject({ allowed: false, result: 'LOG_CUT' });
    expect((cut?.time ?? '') >= before).toBe(true);
  });

  it('a log the gateway cut itself (whole lines, then its cut line) ends with the same entry', () => {
    const text = `${line(1700000000, 'TCP_TUNNEL/200', 'registry.npmjs.org:443')}${GATEWAY_LOG_CUT_LINE}\n`;
    const entries = gatewayLogEntries(text, false);
    expect(entries.map((entry) => entry.destination)).toEqual(['registry.npmjs.org:443', GATEWAY_LOG_CUT]);
    expect(entries.at(-1)).toMatchObject({ allowed: false, result: 'LOG_CUT' });
  });

  it('box text that only contains the cut line is not the cut line', () => {
    const text = line(
      1700000000,
      'TCP_DENIED/403',
      `http://x.invalid/${encodeURIComponent(GATEWAY_LOG_CUT_LINE)}`,
    );
    expect(gatewayLogEntries(text, false).map((entry) => entry.result)).toEqual(['TCP_DENIED/403']);
  });
});
