import { describe, expect, it } from 'vitest';
import {
  appPortOf,
  HealthCausesTold,
  healthEvent,
  healthMessage,
  MAX_CAUSES_TOLD,
  mayTell,
} from './health-report.js';

describe('healthMessage', () => {
  it.each([
    {
      why: 'starting: still waiting, with the last cause',
      worker: { healthy: false, readyAt: null },
      message: 'waiting for /health to pass; last probe: HTTP 404 from /health',
    },
    {
      why: 'had been ready, now out of routing',
      worker: { healthy: false, readyAt: 5 },
      message: 'failing its health check: HTTP 404 from /health',
    },
    {
      why: 'still routable (below failureThreshold): no message',
      worker: { healthy: true, readyAt: 5 },
      message: undefined,
    },
  ])('$why', ({ worker, message }) => {
    expect(healthMessage(worker, '/health', 'HTTP 404 from /health')).toBe(message);
  });
});

describe('mayTell', () => {
  it.each([
    {
      why: 'starting, before one period: an app that is not listening yet',
      worker: { readyAt: null, startedAt: 1000 },
      now: 2999,
      tell: false,
    },
    { why: 'starting, one period on', worker: { readyAt: null, startedAt: 1000 }, now: 3000, tell: true },
    { why: 'had been ready: at once', worker: { readyAt: 2900, startedAt: 1000 }, now: 2950, tell: true },
  ])('$why -> $tell', ({ worker, now, tell }) => {
    expect(mayTell(worker, 2000, now)).toBe(tell);
  });
});

describe('appPortOf', () => {
  const address = { host: '127.0.0.1', port: 32783 };
  it('names the endpoint port where the runtime publishes it elsewhere, the probed port for local workers', () => {
    expect(appPortOf('docker', address, 8000)).toBe(8000);
    expect(appPortOf('fake', address, 8000)).toBe(8000);
    expect(appPortOf('local', address, 8000)).toBe(32783);
  });
});

describe('HealthCausesTold', () => {
  it('tells each cause once per worker, at most MAX_CAUSES_TOLD of them, again after forget', () => {
    const told = new HealthCausesTold();
    expect(told.firstTime('w1', 'a')).toBe(true);
    expect(told.firstTime('w1', 'a')).toBe(false);
    expect(told.firstTime('w2', 'a')).toBe(true);
    expect(told.firstTime('w1', 'b')).toBe(true);
    expect(told.firstTime('w1', 'a')).toBe(false);
    for (let i = 2; i < MAX_CAUSES_TOLD; i++) expect(told.firstTime('w1', `c${i}`)).toBe(true);
    expect(told.firstTime('w1', 'one too many')).toBe(false);
    told.forget('w1');
    expect(told.firstTime('w1', 'a')).toBe(true);
  });

  it('writes the health event with the worker, path and cause', () => {
    expect(healthEvent('w1', '/health', 'connection refused on port 8000', 7)).toEqual({
      at: 7,
      type: 'health',
      message: 'worker w1: connection refused on port 8000',
      data: { workerId: 'w1', path: '/health', cause: 'connection refused on port 8000' },
    });
  });
});
