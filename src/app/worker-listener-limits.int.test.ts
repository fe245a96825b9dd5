// The worker-facing listener's default caps over real loopback sockets: one worker address (a container's address
// is a client) holds 64 connections at most, so that a few containers of one tenant cannot take the listener's
// every connection (with the 512 of before, 16 containers filled its 8,192); another address is still served.
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { type RunningWorkerListener, startWorkerListener } from './worker-listener.js';

const open: Socket[] = [];
let listener: RunningWorkerListener | undefined;
afterEach(async () => {
  for (const socket of open.splice(0)) socket.destroy();
  await listener?.close();
});

/** A connection from `from` that has sent half a request head; resolves to whether the listener kept it 300 ms. */
async function held(port: number, from: string): Promise<boolean> {
  const socket = connect({ port, host: '127.0.0.1', localAddress: from });
  open.push(socket);
  socket.on('error', () => {});
  await once(socket, 'connect');
  socket.write('POST /v2/job-take/w HTTP/1.1\r\n');
  const closed = once(socket, 'close').then(() => false);
  const kept = new Promise<boolean>((resolve) => setTimeout(() => resolve(true), 300));
  return Promise.race([closed, kept]);
}

describe('the worker-facing listener by default', () => {
  it('keeps 64 connections of one worker address and closes the next, and still serves another address', async () => {
    listener = await startWorkerListener({
      address: { host: '127.0.0.1', port: 0 },
      handler: () => false,
      logger: pino({ level: 'silent' }),
    });
    const port = listener.address.port;
    const first = await Promise.all(Array.from({ length: 64 }, () => held(port, '127.0.0.1')));
    expect(first.every(Boolean)).toBe(true);
    expect(await held(port, '127.0.0.1')).toBe(false);
    expect(await held(port, '127.0.0.2')).toBe(true);
  });
});
