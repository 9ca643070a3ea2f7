import { describeSummaryRow, type EgressSummaryRow, summariseDecisions } from '../egress.js';
import type { CreateContext } from './context.js';

/**
 * Once clone and install are done: says what they reached (the pipeline then removes the gateway,
 * unless the box itself uses it: an allowlist of domains). The rows go on the box as a label.
 */
export async function summariseEgress(ctx: CreateContext): Promise<EgressSummaryRow[]> {
  await ctx.egress.collect();
  const summary = summariseDecisions(ctx.egress.decisions);
  for (const row of summary) ctx.log(`egress: ${describeSummaryRow(row)}`);
  return summary;
}
