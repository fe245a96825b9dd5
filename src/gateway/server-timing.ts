/**
 * The `Server-Timing` header of an answer that waited for a wake (docs/workers.md, Waking): the time it waited in
 * the queue, and the phases of the wake that brought its worker (`thaw` or `restore`; for a cold start `placement`,
 * `pull`, `create`, `ready`). Pure.
 */
import type { WakeReport } from '../ports/routing-view.js';

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
