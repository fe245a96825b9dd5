/**
 * The usage ledger in `/metrics` (issue 32): `corral_gpu_seconds_total` by owner, endpoint, GPU product and state,
 * and `corral_usage_amount_total` by owner and currency, read at scrape time from what this replica's recorder
 * counted while it led (its open spans up to the scrape included). Each second is counted by the one replica
 * leading then, so the replicas' counters add up (sum them); a restart starts them at 0, as any counter's. The
 * ledger (`corral usage`, the billing route) stays the record.
 */
import { Counter, type Registry } from 'prom-client';
import type { Clock } from '../ports/clock.js';
import type { ObservedUsage, UsagePrices, UsageTotals } from '../ports/usage.js';
import { addSpan, emptyTotals } from './prices.js';

export interface UsageMetricsOptions {
  registry: Registry;
  /** What this replica's recorder counted (`UsageRecorder.observed`). */
  observed: (now: number) => readonly ObservedUsage[];
  prices: UsagePrices;
  clock: Clock;
}

export function registerUsageMetrics(options: UsageMetricsOptions): void {
  const registers = [options.registry];
  const { observed, prices, clock } = options;
  new Counter({
    name: 'corral_gpu_seconds_total',
    help: "GPU-seconds (a worker's seconds times its GPUs) this replica counted while it led, by owner, endpoint, GPU product and state; sum over replicas",
    labelNames: ['owner', 'endpoint', 'gpu_model', 'state'] as const,
    registers,
    collect() {
      this.reset();
      for (const o of observed(clock()))
        this.inc(
          { owner: o.ownerId, endpoint: o.endpointId, gpu_model: o.gpuProductId, state: o.state },
          o.gpuMs / 1000,
        );
    },
  });
  new Counter({
    name: 'corral_usage_amount_total',
    help: 'The price of the GPU time this replica counted while it led (config usage.prices), by owner; sum over replicas',
    labelNames: ['owner', 'currency'] as const,
    registers,
    collect() {
      this.reset();
      const byOwner = new Map<string, UsageTotals>();
      for (const o of observed(clock())) {
        const totals = byOwner.get(o.ownerId) ?? emptyTotals(prices.currency);
        byOwner.set(o.ownerId, totals);
        addSpan(totals, prices, o);
      }
      for (const [owner, totals] of byOwner) this.inc({ owner, currency: totals.currency }, totals.amount);
    },
  });
}
