/** What every command receives besides its arguments: aborted on SIGINT/SIGTERM (mode `abort`). */
export interface ActionContext {
  signal: AbortSignal;
}
