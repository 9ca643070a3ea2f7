import { describe, expect, it } from 'vitest';
import { gatewayRulesCheck } from './list.js';
import { LABEL_ALLOW, LABEL_BLOCKED } from './record.js';

// The live comparison runs against the engine (packages/hostile/test/gateway-rules.int.test.ts);
// here, what the row says before any docker call.
describe('gatewayRulesCheck without usable labels', () => {
  it('fails a box made before the labels existed (nothing to compare with)', async () => {
    const check = await gatewayRulesCheck('sbx-nolabels', {});
    expect(check).toMatchObject({ id: 'allowlist-gateway-rules', pass: false });
    expect(check.seen).toMatch(/recreate it/);
  });

  it('fails a label that does not parse as destinations', async () => {
    const check = await gatewayRulesCheck('sbx-badlabel', {
      [LABEL_ALLOW]: 'not a host!',
      [LABEL_BLOCKED]: '10.0.0.0/8',
    });
    expect(check).toMatchObject({ pass: false, seen: 'the ca.sandbox.allow label does not parse' });
  });
});
