import {
  describeFailedDecisions,
  describeSummaryRow,
  type EgressSummaryRow,
  summariseDecisions,
} from '../egress.js';
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

/**
 * What the gateway logged as failed in `phase` (a failed clone or install), for the phase's error;
 * undefined when it logged no failure. git and npm only see "CONNECT tunnel failed, response
 * 403", while the gateway knows which destination and why.
 */
export async function gatewaySide(
  ctx: CreateContext,
  phase: 'clone' | 'install',
): Promise<string | undefined> {
  await ctx.egress.collect().catch(() => undefined);
  const why = describeFailedDecisions(ctx.egress.decisions, phase);
  return why;
}
