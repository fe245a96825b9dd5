/**
 * The headers that name the worker which served an answer, on every proxied answer and upgrade: Corral's own
 * `X-Corral-Worker`, and the names RunPod's load-balancing endpoints answer for worker affinity (issue 35),
 * `X-Corral-Worker-Id` and `X-Runpod-Worker-Id`, so that a client written for RunPod finds its worker's id where it
 * looks. A worker's own copies are replaced (headers.ts).
 */
import type { Lease } from './dispatcher-types.js';

export function workerHeaders(lease: Lease): Record<string, string> {
  return {
    'x-corral-worker': lease.workerId,
    'x-corral-worker-id': lease.workerId,
    'x-runpod-worker-id': lease.workerId,
    'x-corral-queue-ms': String(lease.queuedMs),
  };
}
