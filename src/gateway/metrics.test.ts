import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { GatewayMetrics } from './metrics.js';

function metricsWithTraffic(endpoints: string[]) {
  const registry = new Registry();
  const metrics = new GatewayMetrics({ registry, load: () => [] });
  for (const endpoint of endpoints) {
    metrics.observeRequest(endpoint, 200, 12, 0);
    metrics.observeColdStart(endpoint, 900);
    metrics.observeScaleDecision(
      endpoint,
      { desired: 1, victims: [], reason: '', thresholdCrossedAt: 1_000 },
      1_040,
    );
  }
  return { registry, metrics };
}

describe('GatewayMetrics', () => {
  it('exports requests, cold starts and decision delays per endpoint', async () => {
    const { registry } = metricsWithTraffic(['ep-a']);
    const text = await registry.metrics();
    expect(text).toContain('corral_gateway_requests_total{endpoint="ep-a",status="200"} 1');
    expect(text).toContain('corral_gateway_cold_start_seconds_count{endpoint="ep-a"} 1');
    expect(text).toContain('corral_autoscaler_decision_delay_seconds_sum{endpoint="ep-a"} 0.04');
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
      'corral_autoscaler_decision_delay_seconds_count',
    ]) {
      expect(text).toMatch(new RegExp(`^${name}\\{endpoint="ep-kept"[^}]*\\} 1$`, 'm'));
    }
  });
});
