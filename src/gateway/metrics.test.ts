import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { GatewayMetrics } from './metrics.js';

function metricsWithTraffic(endpoints: string[]) {
  const registry = new Registry();
  const metrics = new GatewayMetrics({ registry, load: () => [] });
  for (const endpoint of endpoints) {
    metrics.observeRequest(endpoint, 200, 12, 0);
    metrics.observeColdStart(endpoint, 900);
  }
  return { registry, metrics };
}

describe('GatewayMetrics', () => {
  it('exports requests and cold starts per endpoint', async () => {
    const { registry } = metricsWithTraffic(['ep-a']);
    const text = await registry.metrics();
    expect(text).toContain('corral_gateway_requests_total{endpoint="ep-a",status="200"} 1');
    expect(text).toContain('corral_gateway_cold_start_seconds_count{endpoint="ep-a"} 1');
  });

  it('exports the workers of each endpoint by state, at scrape time', async () => {
    const registry = new Registry();
    const workers = [
      { endpointId: 'ep-a', state: 'running' },
      { endpointId: 'ep-a', state: 'running' },
      { endpointId: 'ep-a', state: 'starting' },
      { endpointId: 'ep-b', state: 'draining' },
    ];
    new GatewayMetrics({ registry, load: () => [], workers: () => workers });
    let text = await registry.metrics();
    expect(text).toContain('corral_endpoint_workers{endpoint="ep-a",state="running"} 2');
    expect(text).toContain('corral_endpoint_workers{endpoint="ep-a",state="starting"} 1');
    expect(text).toContain('corral_endpoint_workers{endpoint="ep-b",state="draining"} 1');
    workers.splice(0, 3);
    text = await registry.metrics();
    expect(text).not.toContain('endpoint="ep-a"');
  });

  it("summarises an endpoint's traffic: requests by status, latency and queue wait, load, cold starts", () => {
    let now = Date.parse('2026-11-25T10:00:00Z');
    const metrics = new GatewayMetrics({
      registry: new Registry(),
      clock: () => now,
      load: () => [{ endpointId: 'ep-a', queueLength: 3, inFlight: 2 }],
    });
    now += 90_500;
    expect(metrics.summary('ep-a')).toEqual({
      window: { since: Date.parse('2026-11-25T10:00:00Z'), seconds: 91 },
      requests: { total: 0, byStatus: {} },
      latencyMs: { p50: null, p99: null, mean: null },
      queueWaitMs: { p50: null, p99: null, mean: null },
      queueDepth: 3,
      inFlight: 2,
      coldStarts: { count: 0, meanMs: null },
      thaws: { count: 0, meanMs: null },
      restores: { count: 0, meanMs: null },
    });
    // 98 fast requests (7 ms, in the 5-10 ms bucket), two slow ones (2 s, in the 1-2.5 s bucket).
    for (let i = 0; i < 98; i++) metrics.observeRequest('ep-a', 200, 7, 0);
    metrics.observeRequest('ep-a', 504, 2_000, 2_000);
    metrics.observeRequest('ep-a', 499, 2_000, 0);
    metrics.observeColdStart('ep-a', 1_500);
    metrics.observeColdStart('ep-a', 2_500);
    const summary = metrics.summary('ep-a');
    expect(summary.requests).toEqual({ total: 100, byStatus: { 200: 98, 504: 1, 499: 1 } });
    expect(summary.latencyMs.p50).toBeGreaterThan(5);
    expect(summary.latencyMs.p50).toBeLessThanOrEqual(10);
    expect(summary.latencyMs.p99).toBeGreaterThan(1_000);
    expect(summary.latencyMs.p99).toBeLessThanOrEqual(2_500);
    expect(summary.latencyMs.mean).toBe(46.9);
    expect(summary.queueWaitMs.mean).toBe(20);
    expect(summary.coldStarts).toEqual({ count: 2, meanMs: 2_000 });
    expect(metrics.summary('ep-unknown').requests.total).toBe(0);
  });

  it('counts thaws and restores apart from cold starts, in the summary and on /metrics', async () => {
    const registry = new Registry();
    let now = Date.parse('2026-11-25T10:00:00Z');
    const metrics = new GatewayMetrics({ registry, clock: () => now, load: () => [] });
    now += 60_000;
    metrics.observeColdStart('ep-a', 3_289);
    metrics.observeColdStart('ep-a', 24, 'thaw');
    metrics.observeColdStart('ep-a', 2_000, 'restore');
    metrics.observeColdStart('ep-a', 2_400, 'restore');
    const summary = metrics.summary('ep-a');
    expect(summary.coldStarts).toEqual({ count: 1, meanMs: 3_289 });
    expect(summary.thaws).toEqual({ count: 1, meanMs: 24 });
    expect(summary.restores).toEqual({ count: 2, meanMs: 2_200 });
    const text = await registry.metrics();
    expect(text).toContain('corral_gateway_cold_start_seconds_count{endpoint="ep-a"} 1');
    expect(text).toContain('corral_gateway_wake_seconds_count{endpoint="ep-a",tier="thaw"} 1');
    expect(text).toContain('corral_gateway_wake_seconds_count{endpoint="ep-a",tier="restore"} 2');
    expect(metrics.counters().get('ep-a')?.wakes).toEqual({
      cold: { count: 1, seconds: 3.289 },
      thaw: { count: 1, seconds: 0.024 },
      restore: { count: 2, seconds: 4.4 },
    });
  });

  it("forgets every series of a deleted endpoint and keeps the others'", async () => {
    const { registry, metrics } = metricsWithTraffic(['ep-gone', 'ep-kept']);
    metrics.forget('ep-gone');
    const text = await registry.metrics();
    expect(text).not.toContain('ep-gone');
    for (const name of [
      'corral_gateway_requests_total',
      'corral_gateway_request_duration_seconds_count',
      'corral_gateway_queue_wait_seconds_count',
      'corral_gateway_cold_start_seconds_count',
    ]) {
      expect(text).toMatch(new RegExp(`^${name}\\{endpoint="ep-kept"[^}]*\\} 1$`, 'm'));
    }
  });
});
