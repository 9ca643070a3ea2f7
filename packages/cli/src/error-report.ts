import { type ErrorKind, isCaSandboxError } from '@ca-sandbox/docker/contracts';

/** What the CLI (and the MCP server) tells the user about an error. */
export interface ErrorReport {
  code: string;
  kind: ErrorKind;
  message: string;
  hint?: string;
  /** Lines that explain the failure (a failed install's last meaningful log lines). */
  details?: string[];
  /** A file on the host with the full story (a failed install's whole log). */
  logFile?: string;
}

const MAX_DETAILS = 20;

/** `details`/`logFile` of the error, else of its cause (a create whose cleanup also failed). */
function failureFields(error: unknown): Pick<ErrorReport, 'details' | 'logFile'> {
  for (let e = error, depth = 0; e && typeof e === 'object' && depth < 3; depth++) {
    const { details, logFile, cause } = e as { details?: unknown; logFile?: unknown; cause?: unknown };
    const lines = Array.isArray(details) ? details.filter((d): d is string => typeof d === 'string') : [];
    if (lines.length || typeof logFile === 'string') {
      return {
        ...(lines.length ? { details: lines.slice(-MAX_DETAILS) } : {}),
        ...(typeof logFile === 'string' && logFile ? { logFile } : {}),
      };
    }
    e = cause;
  }
  return {};
}

export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;
export const EXIT_PREREQUISITE = 3;
/** `exec`: the tool failed before the command ran (docker's convention). */
export const EXIT_EXEC_TOOL_FAILED = 125;

const KIND_EXIT: Record<ErrorKind, number> = {
  usage: EXIT_USAGE,
  prerequisite: EXIT_PREREQUISITE,
  failure: EXIT_FAILURE,
};

/** Exit code for an error kind: usage → 2, prerequisite → 3, failure → 1. */
export function exitCodeFor(kind: ErrorKind): number {
  return KIND_EXIT[kind];
}

// Option names as the user typed them, for the fields whose CLI spelling is not plain kebab-case.
const OPTION_NAMES: Record<string, string> = {
  source: '<repo-url-or-path>',
  argv: '<cmd...>',
  command: '<cmd...>',
  id: '<id>',
  ids: '<id...>',
  timeoutMs: '--timeout',
  boxPath: '<id>:<path>',
  hostDest: '<dest>',
  pids: '--pids',
};

/** `baseImage` → `--base-image`; known positional fields get their usage name. */
export function optionName(field: string): string {
  return OPTION_NAMES[field] ?? `--${field.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
}

interface ZodLikeIssue {
  code?: string;
  path?: readonly PropertyKey[];
  message?: string;
  keys?: readonly string[];
}

function zodIssues(error: unknown): ZodLikeIssue[] | undefined {
  if (!error || typeof error !== 'object') return undefined;
  const issues = (error as { issues?: unknown }).issues;
  if ((error as Error).name === 'ZodError' && Array.isArray(issues)) return issues as ZodLikeIssue[];
  const cause = (error as { cause?: unknown }).cause;
  return cause && cause !== error ? zodIssues(cause) : undefined;
}

/** One sentence naming the bad option(s) of a zod validation failure. */
export function zodSentence(issues: ZodLikeIssue[]): string {
  const parts = issues.slice(0, 3).map((issue) => {
    if (issue.code === 'unrecognized_keys' && issue.keys?.length) {
      return `unknown option ${issue.keys.map((key) => optionName(key)).join(', ')}`;
    }
    const field = issue.path?.find((segment) => typeof segment === 'string');
    const detail = (issue.message ?? 'invalid value').replace(/^Invalid input: /, '').toLowerCase();
    return field ? `invalid value for ${optionName(field)}: ${detail}` : `invalid input: ${detail}`;
  });
  return [...new Set(parts)].join('; ');
}

/**
 * Turns any thrown value into a report: the one place that reads an error for the CLI and the MCP
 * server. Our errors (the CaSandboxError base of every package) carry `code`, `kind` and (for
 * prerequisites) `hint`; zod errors become a usage sentence; anything else is an internal failure.
 */
export function describeError(error: unknown): ErrorReport {
  const issues = zodIssues(error);
  if (!isCaSandboxError(error)) {
    if (issues) return { code: 'INVALID_OPTIONS', kind: 'usage', message: zodSentence(issues) };
    const message = error instanceof Error ? error.message : String(error);
    return {
      code: 'INTERNAL',
      kind: 'failure',
      message: message || 'unknown error',
      ...failureFields(error),
    };
  }
  const { kind } = error;
  const code = /^[A-Z][A-Z0-9_]*$/.test(error.code) ? error.code : 'INTERNAL';
  const report: ErrorReport = { code, kind, message: error.message || 'unknown error' };
  if (issues && kind === 'usage' && !/--|<|invalid value/.test(report.message)) {
    report.message = `${report.message}: ${zodSentence(issues)}`;
  }
  // An option out of bounds (lifecycle LimitError: `option`, `detail`) is said with the flag's name.
  const { option, detail } = error as { option?: unknown; detail?: unknown };
  if (kind === 'usage' && typeof option === 'string' && typeof detail === 'string') {
    report.message = `invalid value for ${optionName(option)}: ${detail}`;
  }
  if (typeof error.hint === 'string' && error.hint) report.hint = error.hint;
  return { ...report, ...failureFields(error) };
}
