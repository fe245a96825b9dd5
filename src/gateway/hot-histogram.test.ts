import fc from 'fast-check';
import { Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { HotHistogram } from './hot-histogram.js';

const BUCKETS = [0.001, 0.01, 0.1, 1, 10];

/** The same observations through HotHistogram and through prom-client's own Histogram, each on its registry. */
async function exportBoth(observations: { endpoint: string; value: number }[]) {
  const hotRegistry = new Registry();
  const referenceRegistry = new Registry();
  const common = { name: 'corral_test_seconds', help: 'A test histogram', buckets: BUCKETS };
  const hot = new HotHistogram({ ...common, labelName: 'endpoint', registers: [hotRegistry] });
  const reference = new Histogram({
    ...common,
    labelNames: ['endpoint'] as const,
    registers: [referenceRegistry],
  });
  for (const { endpoint, value } of observations) {
    hot.series(endpoint).observe(value);
    reference.observe({ endpoint }, value);
  }
  return { hot, hotRegistry, referenceRegistry };
}

const withoutExemplars = (metrics: { values: object[] }[]) =>
  metrics.map((m) => ({ ...m, values: m.values.map(({ exemplar: _, ...v }: { exemplar?: unknown }) => v) }));

describe('HistogramSeries.quantile', () => {
  it("estimates as Prometheus' histogram_quantile does: linear within the bucket", () => {
    const hot = new HotHistogram({
      name: 'q_seconds',
      help: 'q',
      labelName: 'l',
      buckets: BUCKETS,
      registers: [],
    });
    const series = hot.series('a');
    expect(series.quantile(0.5)).toBeUndefined();
    for (let i = 0; i < 4; i++) series.observe(0.005); // (0.001, 0.01]
    for (let i = 0; i < 4; i++) series.observe(0.05); // (0.01, 0.1]
    expect(series.quantile(0.25)).toBeCloseTo(0.0055); // half-way through the first 4
    expect(series.quantile(0.5)).toBeCloseTo(0.01);
    expect(series.quantile(0.75)).toBeCloseTo(0.055);
    series.observe(100); // +Inf: the largest value observed
    expect(series.quantile(1)).toBe(100);
    expect(hot.existing('a')).toBe(series);
    expect(hot.existing('b')).toBeUndefined();
  });
});

describe('HistogramSeries.quantile within what was observed', () => {
  const series = () =>
    new HotHistogram({
      name: 'q_seconds',
      help: 'q',
      labelName: 'l',
      buckets: [0.25, 0.5, 1],
      registers: [],
    }).series('a');

  it('one 324 ms request is a 324 ms median and p99, not the 375 ms of interpolation in 250-500 ms', () => {
    const one = series();
    one.observe(0.324);
    expect(one.quantile(0.5)).toBe(0.324);
    expect(one.quantile(0.99)).toBe(0.324);
  });

  it('identical requests give their value at every quantile', () => {
    const same = series();
    for (let i = 0; i < 10; i++) same.observe(0.3);
    expect([same.quantile(0.01), same.quantile(0.5), same.quantile(1)]).toEqual([0.3, 0.3, 0.3]);
  });

  it('spread over buckets, the estimate is interpolated and stays within min and max', () => {
    const spread = series();
    for (const value of [0.26, 0.27, 0.6, 0.7]) spread.observe(value);
    // Rank 2 of 4 ends the 250-500 ms bucket: its upper bound, above the largest value in it but within max.
    expect(spread.quantile(0.5)).toBeCloseTo(0.5);
    expect(spread.quantile(0.01)).toBeGreaterThanOrEqual(0.26);
    expect(spread.quantile(0.99)).toBeLessThanOrEqual(0.7);
  });
});

describe('HotHistogram', () => {
  it('exports exactly what prom-client exports for the same observations, as text and as JSON', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            endpoint: fc.constantFrom('ep-a', 'ep-b', 'ep "quoted"'),
            value: fc.oneof(fc.constantFrom(0, ...BUCKETS), fc.double({ min: 0, max: 100, noNaN: true })),
          }),
          { maxLength: 40 },
        ),
        async (observations) => {
          const { hotRegistry, referenceRegistry } = await exportBoth(observations);
          expect(await hotRegistry.metrics()).toBe(await referenceRegistry.metrics());
          expect(withoutExemplars(await hotRegistry.getMetricsAsJSON())).toEqual(
            withoutExemplars(await referenceRegistry.getMetricsAsJSON()),
          );
        },
      ),
      { numRuns: 50 },
    );
  });

  it('counts a value equal to a bound in that bound’s bucket and a larger one only in +Inf', async () => {
    const { hotRegistry } = await exportBoth([
      { endpoint: 'ep', value: 0.01 },
      { endpoint: 'ep', value: 50 },
    ]);
    const text = await hotRegistry.metrics();
    expect(text).toContain('corral_test_seconds_bucket{le="0.001",endpoint="ep"} 0');
    expect(text).toContain('corral_test_seconds_bucket{le="0.01",endpoint="ep"} 1');
    expect(text).toContain('corral_test_seconds_bucket{le="10",endpoint="ep"} 1');
    expect(text).toContain('corral_test_seconds_bucket{le="+Inf",endpoint="ep"} 2');
    expect(text).toContain('corral_test_seconds_sum{endpoint="ep"} 50.01');
    expect(text).toContain('corral_test_seconds_count{endpoint="ep"} 2');
  });

  it('forgets a removed series and everything on reset', async () => {
    const { hot, hotRegistry } = await exportBoth([
      { endpoint: 'gone', value: 1 },
      { endpoint: 'kept', value: 1 },
    ]);
    hot.remove('gone');
    const text = await hotRegistry.metrics();
    expect(text).not.toContain('endpoint="gone"');
    expect(text).toContain('endpoint="kept"');
    hotRegistry.resetMetrics();
    expect(await hotRegistry.metrics()).not.toContain('endpoint=');
  });
});
