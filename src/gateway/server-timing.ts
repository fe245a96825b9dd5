/**
 * The `Server-Timing` header of an answer that waited for a wake (docs/workers.md, Waking): the time it waited in
 * the queue, and the phases of the wake that brought its worker (`thaw` or `restore`; for a cold start `model` when it
 * waited for its models' download, `placement`, `pull`, `create`, `ready`). Pure.
 */
import type { RoutableWorker, WakeReport } from '../ports/routing-view.js';

function ms(value: number): string {
  return String(Math.max(0, Math.round(value * 10) / 10));
}

/**
 * `queue;dur=812, thaw;dur=3.2`. A wake that ended before the request arrived was not paid by it: only its queue
 * wait is told.
 */
export function serverTiming(queueMs: number, wake: WakeReport | undefined, arrived: number): string {
  const parts = [`queue;dur=${ms(queueMs)}`];
  if (wake && wake.at >= arrived)
    for (const phase of wake.phases) parts.push(`${phase.name};dur=${ms(phase.ms)}`);
  return parts.join(', ');
}

/**
 * The wake a request that arrived at `arrived` and waited for one was brought out of it by: the first routable
 * worker's wake since then (the leader's report, which a follower reads from the shared routes), if any.
 */
export function wakeSince(workers: readonly RoutableWorker[], arrived: number): WakeReport | undefined {
  return workers.find((w) => w.wake && w.wake.at >= arrived)?.wake;
}

/**
 * The headers of an answer that waited `queueMs` here through a wake, when another replica's gateway serves it (a
 * queued request diverted there once the worker came): `X-Corral-Cold-Start-Ms` and `Server-Timing`.
 */
export function wakeHeaders(
  queueMs: number,
  workers: readonly RoutableWorker[],
  arrived: number,
): Record<string, string> {
  return {
    'x-corral-cold-start-ms': String(queueMs),
    'server-timing': serverTiming(queueMs, wakeSince(workers, arrived), arrived),
  };
}
