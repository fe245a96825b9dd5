/**
 * Scale-up decision (figure 6): an endpoint with one running worker of maxConcurrent 1 and policy `queue`
 * SCALE_POLICY_S; one long request takes the slot, a second one queues; the time from the threshold (the queued
 * request's enqueue + SCALE_POLICY_S) to the autoscaler's decision, as corral_autoscaler_decision_delay_seconds
 * records it, and to the controller creating the new worker.
 */
import type { Registry } from 'prom-client';
import { formatMs, table } from '../support.js';
import { httpGet, waitFor } from './http.js';
import { median, verdict } from './report.js';
import { SCALE_HOLD_MS, SCALE_POLICY_S, STEP_MAX_MS, TARGET, WORK_PATH } from './settings.js';
import { addEndpoint, localEndpoint, removeEndpoint, type Stack } from './stack.js';

export interface ScaleRun {
  /** Threshold crossed -> the autoscaler's decision (corral_autoscaler_decision_delay_seconds). */
  decisionMs: number;
  /** Threshold crossed -> the controller created the new worker (its record). */
  createdMs: number;
  /** Threshold crossed -> the runtime had started its process. */
  startedMs: number;
  /** The queued request's wait, as X-Corral-Queue-Ms says. */
  queuedMs: number;
  desired: number;
  /** What corral_autoscaler_decision_delay_seconds holds for the endpoint, read before it is deleted (and forgotten). */
  registry: { count: number; sumMs: number };
}

export async function scaleRun(stack: Stack, appName: string): Promise<ScaleRun> {
  const endpoint = localEndpoint(
    appName,
    { minWorkers: 1, maxWorkers: 2, maxConcurrent: 1, idleTimeoutSeconds: 60 },
    { type: 'queue', value: SCALE_POLICY_S },
  );
  await addEndpoint(stack, endpoint);
  const host = `${appName}.${stack.config.domain}`;
  const pending: Promise<unknown>[] = [];
  try {
    const first = await waitFor(
      `the first worker of ${appName}`,
      () => stack.routes.routableWorkers(endpoint.id)[0],
      { intervalMs: 10 },
    );
    const load = () => stack.gateway.stats().find((s) => s.endpointId === endpoint.id);
    const hold = httpGet(stack.port, `/work?ms=${SCALE_HOLD_MS}`, { host });
    pending.push(hold.catch(() => undefined));
    await waitFor(
      'the long request to take the slot',
      () => ((load()?.inFlight ?? 0) >= 1 ? true : undefined),
      {
        intervalMs: 2,
      },
    );
    const queued = httpGet(stack.port, WORK_PATH, { host });
    pending.push(queued.catch(() => undefined));
    const decision = await waitFor(
      'the scale-up decision',
      () => stack.metrics.decisions.find((d) => d.endpointId === endpoint.id),
      { intervalMs: 2, maxMs: SCALE_POLICY_S * 1000 + STEP_MAX_MS },
    );
    const added = await waitFor(
      'the new worker',
      () => stack.controller.workersOf(endpoint.id).find((w) => w.id !== first.id && w.startedAt !== null),
      { intervalMs: 2 },
    );
    const [held, served] = await Promise.all([hold, queued]);
    if (held.status !== 200 || served.status !== 200) {
      throw new Error(`answers ${held.status} and ${served.status}: ${held.body} ${served.body}`);
    }
    return {
      registry: await decisionHistogram(stack.registry, endpoint.id),
      decisionMs: decision.decidedAt - decision.crossedAt,
      createdMs: added.createdAt - decision.crossedAt,
      startedMs: (added.startedAt ?? Number.NaN) - decision.crossedAt,
      queuedMs: Number(served.headers['x-corral-queue-ms'] ?? Number.NaN),
      desired: decision.desired,
    };
  } finally {
    await Promise.all(pending);
    await removeEndpoint(stack, endpoint);
  }
}

/** One endpoint's corral_autoscaler_decision_delay_seconds as /metrics shows it: its count and sum. */
async function decisionHistogram(
  registry: Registry,
  endpointId: string,
): Promise<{ count: number; sumMs: number }> {
  const metric = registry.getSingleMetric('corral_autoscaler_decision_delay_seconds');
  const data = metric ? await metric.get() : undefined;
  let count = 0;
  let sum = 0;
  const values = (data?.values ?? []) as {
    value: number;
    metricName?: string;
    labels: { endpoint?: string };
  }[];
  for (const value of values) {
    if (value.labels.endpoint !== endpointId) continue;
    if (value.metricName?.endsWith('_count')) count += value.value;
    if (value.metricName?.endsWith('_sum')) sum += value.value;
  }
  return { count, sumMs: sum * 1000 };
}

/** Prints the scale-up runs and the Registry's histogram, and adds the decision's verdict. */
export function reportScale(scales: ScaleRun[], summary: string[][]): void {
  // Each run's series, read before its endpoint was deleted: a deleted endpoint's series are dropped.
  const histogram = {
    count: scales.reduce((n, s) => n + s.registry.count, 0),
    sumMs: scales.reduce((n, s) => n + s.registry.sumMs, 0),
  };
  console.log(
    `\nScale-up decision: policy queue ${SCALE_POLICY_S} s, one worker of maxConcurrent 1 held by a ` +
      `${SCALE_HOLD_MS} ms request, one request queued; ms from the threshold (enqueue + ${SCALE_POLICY_S} s)`,
  );
  console.log(
    table(
      ['run', 'decision', 'worker created', 'worker process started', 'desired', 'queued request waited'],
      scales.map((s, i) => [
        String(i + 1),
        String(s.decisionMs),
        String(s.createdMs),
        String(s.startedMs),
        String(s.desired),
        String(s.queuedMs),
      ]),
    ),
  );
  const decisionMedian = median(scales.map((s) => s.decisionMs));
  console.log(
    `corral_autoscaler_decision_delay_seconds (Registry): count ${histogram.count}, ` +
      `mean ${formatMs(histogram.count > 0 ? histogram.sumMs / histogram.count : Number.NaN)} ms`,
  );
  summary.push([
    'scale-up decision after the queue threshold (median of 5)',
    `${formatMs(decisionMedian)} ms (worker created ${formatMs(median(scales.map((s) => s.createdMs)))} ms)`,
    `< ${TARGET.decisionMs} ms`,
    verdict(Number.isFinite(decisionMedian) ? decisionMedian < TARGET.decisionMs : undefined),
  ]);
}
