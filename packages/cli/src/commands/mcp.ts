import { InvariantError } from '@ca-sandbox/docker/contracts';
import type { Output } from '../output.js';
import { cliVersion } from '../version.js';

/** `ca-sandbox mcp`: the stdio MCP server. Loaded only here: the SDK is not part of start-up. */
export async function mcpCommand(out: Output): Promise<number> {
  if (out.streams.stdout !== process.stdout)
    throw new InvariantError('the MCP server needs the process stdout');
  const { serveStdio } = await import('../mcp/server.js');
  await serveStdio(cliVersion());
  return 0;
}
