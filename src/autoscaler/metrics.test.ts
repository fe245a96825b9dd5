import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { ScalerMetrics } from './metrics.js';

const decision = (thresholdCrossedAt: number | null) => ({
  desired: 1,
  victims: [],
  reason: '',
  thresholdCrossedAt,
});

describe('ScalerMetrics', () => {
  it('records each threshold crossing once, with the delay to its decision', async () => {
    const registry = new Registry();
    const metrics = new ScalerMetrics({ registry });
    metrics.observeScaleDecision('ep-a', decision(1_000), 1_040);
    metrics.observeScaleDecision('ep-a', decision(1_000), 1_090);
    metrics.observeScaleDecision('ep-a', decision(2_000), 1_500); // not crossed yet
    metrics.observeScaleDecision('ep-a', decision(null), 1_600);
    const text = await registry.metrics();
    expect(text).toContain('corral_autoscaler_decision_delay_seconds_sum{endpoint="ep-a"} 0.04');
    expect(text).toContain('corral_autoscaler_decision_delay_seconds_count{endpoint="ep-a"} 1');
  });

  it('forgets the series of deleted endpoints', async () => {
    const registry = new Registry();
    const metrics = new ScalerMetrics({ registry });
    metrics.observeScaleDecision('ep-a', decision(1_000), 1_040);
    metrics.observeScaleDecision('ep-b', decision(1_000), 1_040);
    metrics.retain((endpoint) => endpoint === 'ep-b');
    const text = await registry.metrics();
    expect(text).not.toContain('endpoint="ep-a"');
    expect(text).toContain('corral_autoscaler_decision_delay_seconds_count{endpoint="ep-b"} 1');
  });
});
