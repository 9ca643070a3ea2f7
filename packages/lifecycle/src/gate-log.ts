import { join } from 'node:path';
import type { IsolationReport } from '@ca-sandbox/run';
import { appendRecord, readRecords, sandboxStateDir } from './command-log.js';

/**
 * The isolation gate's rows as they were when the box was handed out: at create and at each start
 * (the report re-runs the gate too, but a box may have been started with other rows). One JSON
 * line per gate, beside the command log, removed with it; bounded like it.
 */
export interface GateEntry {
  phase: 'create' | 'start';
  /** ISO time the gate ran. */
  at: string;
  ok: boolean;
  checks: { id: string; title: string; expected: string; seen: string; pass: boolean }[];
}

/** Past this size nothing more is appended (a few hundred starts). */
export const MAX_GATE_LOG_BYTES = 2 * 1024 * 1024;

export function gateLogPath(id: string): string {
  return join(sandboxStateDir(id), 'gates.jsonl');
}

/** Appends the gate of `phase` (best effort: the box is already handed out or refused). */
export async function recordGate(
  id: string,
  phase: GateEntry['phase'],
  report: IsolationReport,
): Promise<void> {
  const entry: GateEntry = {
    phase,
    at: new Date().toISOString(),
    ok: report.ok,
    checks: report.checks.map(({ id: check, title, expected, seen, pass }) => ({
      id: check,
      title,
      expected,
      seen,
      pass,
    })),
  };
  await appendRecord(id, gateLogPath(id), entry, MAX_GATE_LOG_BYTES);
}

/** The gate log's lines as parsed JSON, oldest first (the report checks each with its schema). */
export function readGateLog(id: string): Promise<{ lines: unknown[]; complete: boolean }> {
  return readRecords(gateLogPath(id), MAX_GATE_LOG_BYTES);
}
