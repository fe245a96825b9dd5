/**
 * The dashboard history at its bound, measured in this process (part of `npm run bench -- memory`): a
 * `TrafficHistory` with the defaults (10 s, 360 samples, 500 endpoints) fed by a real `GatewayMetrics` until all
 * 500 endpoints have full rings, with the live memory (heap and array buffers after a full collection) and RSS
 * measured before and after, beside the bytes its rings are stated to take (`TrafficHistory.bytesPerEndpoint`).
 * An hour of samples is taken in a moment here: a collection every 10 samples stands for the collections that the
 * 10 s between samples bring in `corral serve`, without which the sampling's short-lived garbage would pile up.
 */
import { getHeapSpaceStatistics } from 'node:v8';
import { Registry } from 'prom-client';
import { GatewayMetrics } from '../src/gateway/metrics.js';
import { TrafficHistory } from '../src/history/history.js';
import type { EndpointWorker } from '../src/ports/traffic.js';
import { collectGarbage } from './support.js';

const MIB = 1024 * 1024;

export interface HistoryAtBound {
  endpoints: number;
  samples: number;
  statedBytes: number;
  /** Heap used and array buffers, after a full collection. */
  liveGrowthMiB: number;
  rssGrowthMiB: number;
  /** Of the RSS growth, V8's young generation grown by the burst of sampling (up to 32 MiB), not kept data. */
  youngGrowthMiB: number;
}

export function measureHistoryAtBound(options = { endpoints: 500, samples: 360, intervalSeconds: 10 }) {
  const ids = Array.from({ length: options.endpoints }, (_, i) => `ep${String(i).padStart(6, '0')}`);
  let now = Date.now();
  const metrics = new GatewayMetrics({ registry: new Registry(), clock: () => now });
  const workers: EndpointWorker[] = ids.map((endpointId) => ({ endpointId, state: 'running' }));
  const live = () => process.memoryUsage().heapUsed + process.memoryUsage().arrayBuffers;
  const young = () => getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')?.space_size ?? 0;
  collectGarbage();
  const before = { live: live(), rss: process.memoryUsage().rss, young: young() };
  const history = new TrafficHistory({
    sources: {
      counters: () => metrics.counters(),
      load: () =>
        ids.map((endpointId) => ({ endpointId, queueLength: 1, oldestEnqueuedAt: now - 50, inFlight: 2 })),
      workers: () => workers,
      desired: () => 1,
      exists: () => true,
    },
    clock: () => now,
    timers: { setTimeout: () => undefined, clearTimeout: () => {} },
    intervalSeconds: options.intervalSeconds,
    samples: options.samples,
    maxEndpoints: options.endpoints,
  });
  for (let s = 0; s < options.samples; s++) {
    for (const id of ids) metrics.observeRequest(id, s % 7 === 0 ? 503 : 200, 5 + (s % 40), 0);
    now += options.intervalSeconds * 1000;
    history.sample();
    if (s % 10 === 9) collectGarbage();
  }
  collectGarbage();
  const after = { live: live(), rss: process.memoryUsage().rss, young: young() };
  const usage = history.usage();
  if (usage.endpoints !== options.endpoints)
    throw new Error(`only ${usage.endpoints} endpoints were tracked`);
  // Keep the history reachable until measured.
  if (history.of(ids[0] ?? '').at.length !== options.samples) throw new Error('the rings are not full');
  return {
    endpoints: usage.endpoints,
    samples: options.samples,
    statedBytes: usage.bytes,
    liveGrowthMiB: (after.live - before.live) / MIB,
    rssGrowthMiB: (after.rss - before.rss) / MIB,
    youngGrowthMiB: (after.young - before.young) / MIB,
  } satisfies HistoryAtBound;
}
