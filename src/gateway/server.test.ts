import { describe, expect, it } from 'vitest';
import { createGatewayServer, HEADERS_TIMEOUT_MS, KEEP_ALIVE_TIMEOUT_MS } from './server.js';

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
    expect(HEADERS_TIMEOUT_MS).toBeLessThanOrEqual(60_000);
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
});
