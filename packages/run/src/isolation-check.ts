// Apart from isolation.ts, so that errors.ts (which run-args.ts imports, and isolation.ts imports
// run-args.ts) can name a failed row without an import cycle.

/** One row of the isolation report, numbered after the CIS Docker Benchmark check it matches. */
export interface IsolationCheck {
  id: string;
  cis: string;
  title: string;
  expected: string;
  seen: string;
  pass: boolean;
}
