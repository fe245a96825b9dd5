/**
 * One gateway's side of one endpoint for the cross-replica tests, over a real dispatcher: its loads (what a
 * `SignalPublisher` writes), the requests that queue there, and its `QueueSignals` (what a scaler reads).
 */

import type { LocalEndpointLoad } from '../../src/cluster/signal-publisher.js';
import { EndpointDispatcher } from '../../src/gateway/dispatcher.js';
import { systemTimers } from '../../src/ports/clock.js';
import type { QueueSignals } from '../../src/ports/queue-signals.js';

export function endpointGateway(endpointId: string, maxConcurrent: number) {
  const listeners = new Set<(endpointId: string) => void>();
  const dispatcher = new EndpointDispatcher({
    maxConcurrent,
    maxQueueLength: 10,
    queueTimeoutMs: 30_000,
    clock: Date.now,
    timers: systemTimers,
    onQueued: () => {
      for (const listener of listeners) listener(endpointId);
    },
  });
  const loads = (): LocalEndpointLoad[] => {
    const s = dispatcher.stats();
    return [
      { endpointId, queueLength: s.queueLength, oldestEnqueuedAt: s.oldestEnqueuedAt, workers: s.workers },
    ];
  };
  const signals: QueueSignals = {
    queueSignal: (id) => {
      if (id !== endpointId) return undefined;
      const s = dispatcher.stats();
      return {
        queueLength: s.queueLength,
        oldestEnqueuedAt: s.oldestEnqueuedAt,
        inFlight: (w) => s.workers.find((x) => x.id === w)?.inFlight ?? 0,
        lastBusyAt: (w) => s.workers.find((x) => x.id === w)?.lastBusyAt,
      };
    },
    onQueued: (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
  return { dispatcher, loads, signals, onQueued: signals.onQueued };
}
