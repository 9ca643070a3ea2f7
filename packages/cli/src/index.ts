export {
  safeJsonStringify,
  sanitizeForTerminal,
  sanitizeLine,
  sanitizeName,
} from '@ca-sandbox/docker/contracts';
export { describeError, type ErrorReport, exitCodeFor } from './error-report.js';
export { LeftoversError, OperationFailedError, PrerequisiteError, UsageError } from './errors.js';
export { main } from './main.js';
export { createMcpServer, serveStdio } from './mcp/server.js';
export { cliVersion, createProgram } from './program.js';
