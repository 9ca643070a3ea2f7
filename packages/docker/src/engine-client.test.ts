// The Engine API client against a socket of our own that accepts and never answers: a hijacked
// call (exec start, attach) gives up after its timeout with the daemon named, never hangs.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { engineHijack } from './engine-client.js';
import { DockerUnavailableError } from './errors.js';

const dir = mkdtempSync(join(tmpdir(), 'ca-sbx-silent-'));
const socketPath = join(dir, 'engine.sock');
const saved = process.env.DOCKER_HOST;
const held = new Set<Socket>();
const server = createServer((socket) => {
  // Reads the request, answers nothing.
  held.add(socket);
  socket.resume();
});

describe('engineHijack against an engine that never answers', () => {
  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(socketPath, resolve));
    process.env.DOCKER_HOST = `unix://${socketPath}`;
  });
  afterAll(async () => {
    if (saved === undefined) delete process.env.DOCKER_HOST;
    else process.env.DOCKER_HOST = saved;
    for (const socket of held) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    rmSync(dir, { recursive: true, force: true });
  });

  it('gives up after its timeout, naming the daemon', async () => {
    const error = await engineHijack('/containers/x/attach?stream=1&stdin=1', {
      verb: 'attach',
      timeoutMs: 300,
    }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(DockerUnavailableError);
    expect((error as Error).message).toMatch(/does not answer .*docker attach: no answer within 300 ms/);
  });
});
