/**
 * Wake from zero (figure 5): an endpoint with minWorkers 0 gets one request; the first response minus the
 * worker's own start-to-ready (spawned here, /health polled every BASELINE_POLL_MS) is the gateway's and the
 * controller's part (queue -> signal -> pass -> start -> probe -> route).
 */
import { randomInt } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { formatMs, freePort, table } from '../support.js';
import { httpGet, pollHealthy, sleep } from './http.js';
import { spawnWorker, stopChild } from './processes.js';
import { median, verdict } from './report.js';
import { BASELINE_POLL_MS, TARGET, WORK_PATH } from './settings.js';
import { addEndpoint, localEndpoint, removeEndpoint, type Stack } from './stack.js';

export interface WakeRun {
  /** Request sent -> response ended (the figure). */
  firstResponseMs: number;
  /** Request sent -> the controller decided on a worker / the runtime started it / its probe passed. */
  decidedMs: number;
  startedMs: number;
  healthyMs: number;
  coldStartHeaderMs: number;
}

export async function wakeRun(stack: Stack, appName: string): Promise<WakeRun> {
  const endpoint = localEndpoint(appName, { minWorkers: 0, maxWorkers: 1, maxConcurrent: 1 });
  await addEndpoint(stack, endpoint);
  try {
    // A random moment within the controller's interval, so that a pass under way is sampled fairly.
    await sleep(randomInt(stack.config.controller.reconcileIntervalMs));
    if (stack.controller.workersOf(endpoint.id).length > 0)
      throw new Error('a worker exists before the request');
    const sentAt = Date.now();
    const start = performance.now();
    const answer = await httpGet(stack.port, WORK_PATH, { host: `${appName}.${stack.config.domain}` });
    const firstResponseMs = performance.now() - start;
    if (answer.status !== 200) throw new Error(`the first request got ${answer.status}: ${answer.body}`);
    const worker = stack.controller.workersOf(endpoint.id)[0];
    return {
      firstResponseMs,
      decidedMs: (worker?.createdAt ?? Number.NaN) - sentAt,
      startedMs: (worker?.startedAt ?? Number.NaN) - sentAt,
      healthyMs: (worker?.readyAt ?? Number.NaN) - sentAt,
      coldStartHeaderMs: Number(answer.headers['x-corral-cold-start-ms'] ?? Number.NaN),
    };
  } finally {
    await removeEndpoint(stack, endpoint);
  }
}

/** The worker's own start-to-ready: spawn it as the local runtime does and poll /health every 10 ms. */
export async function baselineRun(): Promise<number> {
  const port = await freePort();
  const start = performance.now();
  const child = spawnWorker(port);
  try {
    return await pollHealthy(port, start, BASELINE_POLL_MS, child);
  } finally {
    await stopChild(child, 'SIGKILL');
  }
}

/** Prints the wake runs beside their baselines and adds the overhead's verdict. */
export function reportWake(wakes: WakeRun[], baselines: number[], summary: string[][]): void {
  console.log(
    '\nWake from zero: controller + gateway + local runtime (test worker with this node), minWorkers 0; ' +
      'ms from the request sent (new connection)',
  );
  console.log(
    table(
      [
        'run',
        'worker own start-to-ready',
        'first response',
        'overhead',
        'decided',
        'process started',
        'probe passed',
        'X-Corral-Cold-Start-Ms',
      ],
      wakes.map((w, i) => [
        String(i + 1),
        formatMs(baselines[i] ?? Number.NaN),
        formatMs(w.firstResponseMs),
        formatMs(w.firstResponseMs - (baselines[i] ?? Number.NaN)),
        String(w.decidedMs),
        String(w.startedMs),
        String(w.healthyMs),
        String(w.coldStartHeaderMs),
      ]),
    ),
  );
  const baselineMedian = median(baselines);
  const wakeMedian = median(wakes.map((w) => w.firstResponseMs));
  const differenceOfMedians = wakeMedian - baselineMedian;
  // Each wake run paired with the baseline measured just before it.
  const pairedMedian = median(wakes.map((w, i) => w.firstResponseMs - (baselines[i] ?? Number.NaN)));
  const overhead = Math.max(differenceOfMedians, pairedMedian);
  console.log(
    `median: worker own start-to-ready ${formatMs(baselineMedian)} ms (/health polled every ${BASELINE_POLL_MS} ms), ` +
      `first response ${formatMs(wakeMedian)} ms; overhead: difference of the medians ${formatMs(differenceOfMedians)} ms, ` +
      `median of the paired differences ${formatMs(pairedMedian)} ms (the verdict takes the larger); ` +
      'the controller probes a starting worker every 50 ms, as serve sets it',
  );
  summary.push([
    'wake from zero: first response - worker start-to-ready (median of 5)',
    `${formatMs(overhead)} ms (medians ${formatMs(wakeMedian)} - ${formatMs(baselineMedian)}; paired ${formatMs(pairedMedian)})`,
    `< ${TARGET.wakeOverheadMs} ms`,
    verdict(Number.isFinite(overhead) ? overhead < TARGET.wakeOverheadMs : undefined),
  ]);
}
