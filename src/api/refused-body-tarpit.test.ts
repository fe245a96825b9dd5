/** The tarpit for refused bodies: its byte budget per key, and a refused body really read at the bounded rate. */
import { Agent, createServer, type IncomingMessage, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { chargeRefusal, discardThroughTarpit, RefusedBodyTarpit } from './refused-body-tarpit.js';

describe('RefusedBodyTarpit', () => {
  it('reads a burst at once, then makes a key wait as long as its debt takes to refill, keys apart', () => {
    let now = 0;
    const tarpit = new RefusedBodyTarpit({ bytesPerSecond: 1000, burstBytes: 2000, clock: () => now });
    expect(tarpit.take('a', 1500)).toBe(0);
    expect(tarpit.take('a', 500)).toBe(0);
    expect(tarpit.take('a', 250)).toBe(250);
    expect(tarpit.take('b', 2000)).toBe(0);
    now = 250;
    expect(tarpit.take('a', 0)).toBe(0);
    expect(tarpit.take('a', 1000)).toBe(1000);
    now = 100_000;
    expect(tarpit.take('a', 2000)).toBe(0); // Refilled to the burst, not beyond.
    expect(tarpit.take('a', 1)).toBe(1);
  });

  it('forgets the least recently used key beyond maxKeys', () => {
    const tarpit = new RefusedBodyTarpit({
      bytesPerSecond: 1000,
      burstBytes: 1000,
      clock: () => 0,
      maxKeys: 1,
    });
    expect(tarpit.take('a', 1000)).toBe(0);
    expect(tarpit.take('b', 1000)).toBe(0);
    expect(tarpit.take('a', 1000)).toBe(0); // a was forgotten: a full burst again.
  });
});

describe('chargeRefusal', () => {
  const request = (complete: boolean) => ({ complete, readableFlowing: null }) as unknown as IncomingMessage;

  it('charges a refusal its minimum and the body already read, and holds the answer back by the debt', () => {
    let now = 0;
    const tarpit = new RefusedBodyTarpit({
      bytesPerSecond: 1000,
      burstBytes: 1000,
      minChargeBytes: 100,
      clock: () => now,
    });
    const read = { lingering: true, declaredBytes: 400 };
    expect(chargeRefusal(tarpit, 'a', request(true), read)).toEqual({ delayMs: 0, close: false });
    expect(chargeRefusal(tarpit, 'a', request(true), read)).toEqual({ delayMs: 0, close: false });
    expect(chargeRefusal(tarpit, 'a', request(true), read)).toEqual({ delayMs: 500, close: false });
    expect(chargeRefusal(tarpit, 'b', request(true), read)).toEqual({ delayMs: 0, close: false });
    now = 10_000_000;
    // Held back at most MAX_ANSWER_DELAY_MS, whatever the debt.
    expect(chargeRefusal(tarpit, 'a', request(true), { lingering: true, declaredBytes: 1e9 }).delayMs).toBe(
      10_000,
    );
  });

  it('closes the connection, reading nothing, when an unread body is declared too large to linger for', () => {
    const tarpit = new RefusedBodyTarpit({ bytesPerSecond: 1000, burstBytes: 1000, clock: () => 0 });
    const unread = request(false);
    expect(chargeRefusal(tarpit, 'a', unread, { lingering: false, declaredBytes: 1e9 })).toEqual({
      delayMs: 0,
      close: true,
    });
    expect(tarpit.take('a', 1000)).toBe(0); // Nothing was charged.
  });
});

describe('discardThroughTarpit', () => {
  let server: Server | undefined;
  afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

  /** A server that refuses every body with 413 at once and discards it through a tarpit of `bytesPerSecond`. */
  async function refusing(bytesPerSecond: number): Promise<number> {
    const tarpit = new RefusedBodyTarpit({ bytesPerSecond, burstBytes: 0, clock: () => Date.now() });
    const refuser = createServer((req, res) => {
      discardThroughTarpit(req, tarpit, 'one');
      res.writeHead(413).end('too large');
    });
    server = refuser;
    await new Promise<void>((resolve) => refuser.listen(0, '127.0.0.1', resolve));
    return (refuser.address() as AddressInfo).port;
  }

  /** Sends `body` on the one kept-alive socket; resolves with the status once the answer is read. */
  function post(port: number, agent: Agent, body: Buffer): Promise<number> {
    return new Promise((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, method: 'POST', agent }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', reject);
      req.end(body);
    });
  }

  it('answers at once, and reads the refused body on the kept-alive connection no faster than the rate', async () => {
    const port = await refusing(4 * 2 ** 20);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const body = Buffer.alloc(2 ** 20, 'x');
    const started = performance.now();
    expect(await post(port, agent, Buffer.alloc(10, 'x'))).toBe(413);
    const first = performance.now() - started;
    // 2 MiB at 4 MiB/s: the third answer can come only once the first two bodies were read, after ~500 ms.
    expect(await post(port, agent, body)).toBe(413);
    expect(await post(port, agent, body)).toBe(413);
    expect(await post(port, agent, Buffer.alloc(10, 'x'))).toBe(413);
    const all = performance.now() - started;
    agent.destroy();
    expect(first).toBeLessThan(200);
    expect(all).toBeGreaterThan(400);
  });
});
