import { describe, expect, it } from 'vitest';
import { describeFailedDecisions } from './egress.js';

const entry = (phase: string, result: string, destination: string) => ({
  time: '2026-12-01T00:00:00.000Z',
  allowed: !/DENIED|\/403$|\/000$/.test(result),
  result,
  method: 'CONNECT',
  destination,
  phase,
});

describe('describeFailedDecisions', () => {
  it("names each failed destination of the phase once, with the gateway's reason", () => {
    const text = describeFailedDecisions(
      [
        entry('clone', 'TCP_TUNNEL/200', 'ok.example:443'),
        entry('clone', 'NONE_NONE/500', 'github.com:443'),
        entry('clone', 'NONE_NONE/500', 'github.com:443'),
        entry('clone', 'TCP_DENIED/403', 'evil.example:443'),
        entry('clone', 'NONE_NONE/503', '127.0.0.1:9'),
        entry('install', 'TCP_DENIED/403', 'other-phase.example:443'),
      ],
      'clone',
    );
    expect(text).toBe(
      'github.com:443: the gateway could not resolve or reach it; ' +
        'evil.example:443: refused by the gateway (not on its list, or an address it blocks); ' +
        '127.0.0.1:9: the gateway could not connect to it',
    );
  });

  it('is undefined when nothing of the phase failed', () => {
    expect(describeFailedDecisions([entry('clone', 'TCP_TUNNEL/200', 'a:443')], 'clone')).toBeUndefined();
    expect(describeFailedDecisions([entry('install', 'TCP_DENIED/403', 'a:443')], 'clone')).toBeUndefined();
  });
});
