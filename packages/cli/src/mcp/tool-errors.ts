import type { ErrorReport } from '../error-report.js';

// The CLI's flags and operands, as the MCP tools name the same inputs.
const PARAMETERS: Record<string, string> = {
  '--name': 'name',
  '--network': 'network',
  '--allow': 'allow',
  '--builder': 'builder',
  '--ref': 'ref',
  '--runtime': 'runtime',
  '--memory': 'memory',
  '--cpus': 'cpus',
  '--pids': 'pids',
  '--base-image': 'baseImage',
  '--timeout': 'timeoutSeconds',
  '--max-bytes': 'maxBytes',
  '--force': 'force',
  '--all': 'all',
  '--keep-volume': 'keepVolume',
  '--dry-run': 'dryRun',
  '--images': 'images',
  '<repo-url-or-path>': 'source',
  '<id...>': 'ids',
  '<id>:<path>': 'path',
  '<id>': 'id',
  '<cmd...>': 'command',
  '<dest>': 'destination',
  '<host-dest>': 'destination',
};

function camel(flag: string): string {
  return flag.slice(2).replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
}

/** A CLI message in the tools' words: parameter names instead of flags, no `--help`. */
export function toolWords(text: string): string {
  return text
    .replace(/\s*\(?see --help\)?/g, '')
    .replace(/\buse (--)?force\b/g, 'set force: true')
    .replace(/<id>:<path>|<repo-url-or-path>|<id\.\.\.>|<cmd\.\.\.>|<host-dest>|<dest>|<id>/g, (operand) =>
      PARAMETERS[operand] ? `\`${PARAMETERS[operand]}\`` : operand,
    )
    .replace(/--[a-z][a-z-]*/g, (flag) => `\`${PARAMETERS[flag] ?? camel(flag)}\``);
}

/** An error report as a tool reports it. */
export function toolErrorReport(report: ErrorReport): ErrorReport {
  return {
    ...report,
    message: toolWords(report.message),
    ...(report.hint ? { hint: toolWords(report.hint) } : {}),
  };
}
