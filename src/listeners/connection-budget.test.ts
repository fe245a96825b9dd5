import { describe, expect, it } from 'vitest';
import { fitConnections } from './connection-budget.js';

const configured = {
  api: { maxConnections: 1024, maxConnectionsPerClient: 256 },
  gateway: { maxConnections: 8192, maxConnectionsPerClient: 2048 },
  workers: { maxConnections: 1024, maxConnectionsPerClient: 64 },
  reservedFiles: 1024,
};

describe('fitConnections', () => {
  it('keeps the configured caps where they and the reserve fit under the limit', () => {
    // 1024 + 2 * 8192 + 1024 (the worker-facing listener) + 1024 = 19,456 files.
    expect(fitConnections(configured, 19_456)).toEqual({ ...configured, lowered: false });
    expect(fitConnections(configured, 1_048_576)).toEqual({ ...configured, lowered: false });
  });

  it("counts the worker-facing listener's connections: one file fewer and every cap is lowered", () => {
    expect(fitConnections(configured, 19_455).lowered).toBe(true);
  });

  it('keeps them where the limit is unknown or unlimited', () => {
    expect(fitConnections(configured, undefined).lowered).toBe(false);
    expect(fitConnections(configured, Number.POSITIVE_INFINITY).lowered).toBe(false);
  });

  it('lowers every cap by one factor under a smaller limit, leaving the reserve free', () => {
    const fitted = fitConnections(configured, 10_000);
    expect(fitted.lowered).toBe(true);
    expect(fitted.reservedFiles).toBe(1024);
    expect(fitted.api.maxConnections).toBe(498);
    expect(fitted.gateway.maxConnections).toBe(3989);
    expect(fitted.workers.maxConnections).toBe(498);
    expect(
      fitted.api.maxConnections +
        2 * fitted.gateway.maxConnections +
        fitted.workers.maxConnections +
        fitted.reservedFiles,
    ).toBeLessThanOrEqual(10_000);
    // A client's cap shrinks by the same factor: one address still holds a quarter of a listener at most.
    expect(fitted.api.maxConnectionsPerClient).toBe(124);
    expect(fitted.gateway.maxConnectionsPerClient).toBe(997);
    expect(fitted.workers.maxConnectionsPerClient).toBe(31);
  });

  it('under a tiny limit keeps a quarter of it in reserve, and at least one connection per listener and client', () => {
    const fitted = fitConnections(configured, 1024);
    expect(fitted.reservedFiles).toBe(256);
    expect(fitted.api).toEqual({ maxConnections: 42, maxConnectionsPerClient: 10 });
    expect(fitted.gateway).toEqual({ maxConnections: 341, maxConnectionsPerClient: 85 });
    expect(fitted.workers).toEqual({ maxConnections: 42, maxConnectionsPerClient: 2 });
    const tiny = fitConnections(configured, 8);
    expect(tiny.api).toEqual({ maxConnections: 1, maxConnectionsPerClient: 1 });
    expect(tiny.workers).toEqual({ maxConnections: 1, maxConnectionsPerClient: 1 });
  });

  it('keeps the other settings of a listener', () => {
    const withTimeouts = {
      ...configured,
      api: { ...configured.api, headersTimeoutMs: 10_000 },
      gateway: { ...configured.gateway, headersTimeoutMs: 10_000 },
      workers: { ...configured.workers, headersTimeoutMs: 10_000 },
    };
    expect(fitConnections(withTimeouts, 1024).api.headersTimeoutMs).toBe(10_000);
    expect(fitConnections(withTimeouts, 1024).workers.headersTimeoutMs).toBe(10_000);
  });
});
