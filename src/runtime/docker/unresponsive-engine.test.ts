/**
 * An engine that accepts connections and never answers (a frozen dockerd) counts as unreachable after the listing
 * timeout, so that the controller's passes see an outage instead of waiting forever. A real socket; no Docker.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RuntimeError } from '../types.js';
import { DockerRuntime } from './docker-runtime.js';

describe('DockerRuntime on an engine that never answers', () => {
  const socketPath = join(tmpdir(), `corral-silent-${randomUUID().slice(0, 8)}.sock`);
  const held: Socket[] = [];
  const server = createServer((socket) => {
    held.push(socket); // read, never answered
  });
  beforeAll(() => new Promise<void>((resolve) => server.listen(socketPath, resolve)));
  afterAll(() => {
    for (const socket of held) socket.destroy();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('a listing fails with UNAVAILABLE after listTimeoutMs, naming the engine', async () => {
    const runtime = new DockerRuntime({
      docker: new Docker({ socketPath }),
      logger: pino({ level: 'silent' }),
      listTimeoutMs: 200,
    });
    const started = Date.now();
    const error = await runtime.list({}).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RuntimeError);
    expect(error).toMatchObject({ code: 'UNAVAILABLE' });
    expect((error as Error).message).toBe(
      `cannot reach the Docker engine at ${socketPath}: no answer to a listing within 200 ms`,
    );
    expect(Date.now() - started).toBeLessThan(5_000);
    await runtime.close();
  });
});
