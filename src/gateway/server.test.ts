import { once } from 'node:events';
import { request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { msUntilHalfHeadClosed } from '../../test/support/half-head.js';
import { ManualTimers } from '../../test/support/manual-timers.js';
import { CONNECTIONS_CHECKING_INTERVAL_MS } from '../listeners/client-deadlines.js';
import {
  closeGatewayServer,
  createGatewayServer,
  HEADERS_TIMEOUT_MS,
  KEEP_ALIVE_TIMEOUT_MS,
} from './server.js';

describe('createGatewayServer', () => {
  const handlers = { handleRequest: () => {}, handleUpgrade: () => {} };

  it('lets a request live through the longest queue wait plus the longest requestTimeout, not node’s 300 s', () => {
    const server = createGatewayServer(handlers, {
      maxRequestTimeoutSeconds: 3600,
      queueTimeoutSeconds: 300,
    });
    expect(server.requestTimeout).toBeGreaterThan((3600 + 300) * 1000);
    expect(server.requestTimeout).toBeLessThanOrEqual((3600 + 300) * 1000 + 120_000);
    server.close();
  });

  it('keeps a head deadline against slowloris clients and idle connections past common load balancers’', () => {
    const server = createGatewayServer(handlers, { maxRequestTimeoutSeconds: 60, queueTimeoutSeconds: 10 });
    expect(server.headersTimeout).toBe(HEADERS_TIMEOUT_MS);
    expect(HEADERS_TIMEOUT_MS).toBeLessThanOrEqual(10_000);
    expect(server.headersTimeout).toBeLessThan(server.requestTimeout);
    expect(server.keepAliveTimeout).toBe(KEEP_ALIVE_TIMEOUT_MS);
    expect(KEEP_ALIVE_TIMEOUT_MS).toBeGreaterThan(60_000);
    server.close();
  });

  it('routes requests and upgrades to the gateway', () => {
    const server = createGatewayServer(handlers, { maxRequestTimeoutSeconds: 60, queueTimeoutSeconds: 10 });
    expect(server.listeners('request')).toContain(handlers.handleRequest);
    expect(server.listeners('upgrade')).toContain(handlers.handleUpgrade);
    server.close();
  });

  it('takes its deadlines from the configured limits', () => {
    const server = createGatewayServer(handlers, {
      maxRequestTimeoutSeconds: 60,
      queueTimeoutSeconds: 10,
      limits: { headersTimeoutMs: 2_000, keepAliveTimeoutMs: 5_000, maxRequestsPerSocket: 100 },
    });
    expect([server.headersTimeout, server.keepAliveTimeout, server.maxRequestsPerSocket]).toEqual([
      2_000, 5_000, 100,
    ]);
    server.close();
  });

  it('closes a connection that has sent half a head once the head deadline has passed, within a check interval', async () => {
    const server = createGatewayServer(
      { handleRequest: (_req, res) => res.end('ok'), handleUpgrade: () => {} },
      {
        maxRequestTimeoutSeconds: 60,
        queueTimeoutSeconds: 10,
        limits: { headersTimeoutMs: 300, keepAliveTimeoutMs: 5_000, maxRequestsPerSocket: 0 },
      },
    );
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const elapsed = await msUntilHalfHeadClosed((server.address() as AddressInfo).port);
      expect(elapsed).toBeGreaterThanOrEqual(250);
      // The deadline, one check interval, and room for a loaded machine.
      expect(elapsed).toBeLessThan(300 + CONNECTIONS_CHECKING_INTERVAL_MS + 2_000);
    } finally {
      server.close();
    }
  });
});

describe('closeGatewayServer', () => {
  /** A gateway server on a loopback port whose requests to `/hold` are never answered, and to `/` at once. */
  async function serverHolding(): Promise<{ server: Server; port: number }> {
    const server = createGatewayServer(
      {
        handleRequest: (req, res) => {
          if (req.url !== '/hold') res.end('ok');
        },
        handleUpgrade: () => {},
      },
      { maxRequestTimeoutSeconds: 60, queueTimeoutSeconds: 10 },
    );
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return { server, port: (server.address() as AddressInfo).port };
  }
  /** Sends a request; resolves with its response, or with the error that ended it. */
  const send = (port: number, path: string) =>
    new Promise<IncomingMessage | Error>((resolve) => {
      const req = httpRequest({ host: '127.0.0.1', port, path });
      req.on('response', resolve);
      req.on('error', resolve);
      req.end();
    });

  it('closes a connection whose request is never answered once the grace has passed, and not before', async () => {
    const { server, port } = await serverHolding();
    const arrived = once(server, 'request');
    const held = send(port, '/hold');
    await arrived;
    const timers = new ManualTimers(0);
    let closed = false;
    const closing = closeGatewayServer(server, { graceMs: 10_000, timers }).then(() => {
      closed = true;
    });
    await new Promise((r) => setImmediate(r));
    timers.advance(9_999);
    await new Promise((r) => setImmediate(r));
    expect(closed).toBe(false);
    timers.advance(1);
    await closing;
    expect(await held).toBeInstanceOf(Error);
  });

  it('resolves without waiting for the grace when nothing is in flight', async () => {
    const { server, port } = await serverHolding();
    const answered = await send(port, '/');
    (answered as IncomingMessage).resume();
    await once(answered as IncomingMessage, 'end');
    await closeGatewayServer(server, { graceMs: 10_000, timers: new ManualTimers(0) });
    expect(server.listening).toBe(false);
  });
});
