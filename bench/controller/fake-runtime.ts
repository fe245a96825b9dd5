/**
 * Part 1, fake runtime: converging with an instant probe (a) and a batched one (b), then the steady-state
 * `reconcile()` passes on (b) interleaved with their baseline, against the 200 ms target.
 */
import { performance } from 'node:perf_hooks';
import { answered } from '../../src/controller/health/probe-result.js';
import { LABELS } from '../../src/runtime/types.js';
import { formatMs, formatRatio, loadAverage, type Summary, summarize, table } from '../support.js';
import { batchedProbe, converge, describeConvergence } from './converge.js';
import {
  CONVERGE_MAX_MS,
  ENDPOINTS,
  PASS_TARGET_MS,
  SERVE_INTERVAL_MS,
  STEADY_PASSES,
  STEADY_WARMUP,
  TOTAL_WORKERS,
  WORKERS_PER_ENDPOINT,
} from './settings.js';

/** Returns the steady passes' summary (b), which part 3 compares its own with. */
export async function benchFake(): Promise<Summary | undefined> {
  console.log(
    `\n-- fake runtime: ${ENDPOINTS.toLocaleString('en')} endpoints x ${WORKERS_PER_ENDPOINT} workers ` +
      `(minNum = maxNum = ${WORKERS_PER_ENDPOINT}, gpuNum 0), SQLite temp file (WAL), controller started as ` +
      `corral serve starts it (interval ${SERVE_INTERVAL_MS} ms), at most ${CONVERGE_MAX_MS / 1000} s to converge --`,
  );
  console.log(`load average ${loadAverage()}`);

  // a. As asked: a probe that answers true at once (`async () => true`).
  const instant = await converge(async () => answered(200));
  try {
    console.log(`probe answering true at once: ${describeConvergence(instant)}`);
    if (!instant.converged) {
      const rate = instant.controller.workers().filter((w) => w.healthy).length / instant.passes.length;
      console.log(
        `  ${rate.toFixed(2)} workers became healthy per pass: every health change pokes the controller, and ` +
          'a pass over the fake runtime and SQLite never waits on I/O, so each poke runs a whole pass before the ' +
          `next probe's timer can fire (nothing coalesces); at that rate all ${TOTAL_WORKERS.toLocaleString('en')} ` +
          `take about ${formatMs(((TOTAL_WORKERS / Math.max(rate, 1e-9)) * summarize(instant.passes.slice(1)).p50) / 1000)} s`,
      );
    }
  } finally {
    await instant.dispose();
  }

  // b. The same, with the probes of one event-loop turn answering together: the steady state is measured on it.
  const setup = await converge(batchedProbe());
  const { store, runtime, controller } = setup;
  try {
    console.log(`probe answering true on the next turn, in one batch: ${describeConvergence(setup)}`);
    console.log(
      `memory after converging: RSS ${mib(process.memoryUsage().rss)}, heap used ${mib(process.memoryUsage().heapUsed)}`,
    );

    // Steady state: the loop and the probes are stopped; each pass is a direct call, next to the baseline.
    const baseline: number[] = [];
    const steady: number[] = [];
    const baselineOnce = async () => {
      const start = performance.now();
      await store.endpoints.liveVersions();
      await runtime.list({ [LABELS.managed]: 'true' });
      return performance.now() - start;
    };
    const passOnce = async () => {
      const start = performance.now();
      await controller.reconcile();
      return performance.now() - start;
    };
    const creates = runtime.counters.creates;
    const removes = runtime.counters.removes;
    for (let i = 0; i < STEADY_WARMUP; i++) {
      await baselineOnce();
      await passOnce();
    }
    for (let i = 0; i < STEADY_PASSES; i++) {
      // Alternate which goes first, so that neither always follows the other's garbage.
      if (i % 2 === 0) {
        baseline.push(await baselineOnce());
        steady.push(await passOnce());
      } else {
        steady.push(await passOnce());
        baseline.push(await baselineOnce());
      }
    }
    const changed =
      runtime.counters.creates !== creates ||
      runtime.counters.removes !== removes ||
      !controller.workers().every((w) => w.state === 'running' && w.healthy);

    const s = summarize(steady);
    const b = summarize(baseline);
    console.log(
      `\nsteady state (b): ${STEADY_PASSES} passes (after ${STEADY_WARMUP} unmeasured), each interleaved with ` +
        'the baseline; controller loop and probes stopped during them',
    );
    console.log(
      table(
        ['figure', 'n', 'p50 ms', 'p99 ms', 'max ms', 'p50/base', 'p99/base'],
        [
          [
            'cold pass (created all 10,000 workers)',
            '1',
            formatMs(setup.passes[0] ?? Number.NaN),
            '',
            '',
            '',
            '',
          ],
          [
            'steady reconcile() pass',
            String(s.n),
            formatMs(s.p50),
            formatMs(s.p99),
            formatMs(s.max),
            formatRatio(s.p50 / b.p50),
            formatRatio(s.p99 / b.p99),
          ],
          [
            'baseline: endpoints.liveVersions() + runtime.list()',
            String(b.n),
            formatMs(b.p50),
            formatMs(b.p99),
            formatMs(b.max),
            '',
            '',
          ],
        ],
      ),
    );
    if (changed) console.log('WARNING: a steady-state pass created, removed or changed workers');
    console.log(`load average after: ${loadAverage()}`);
    const met = setup.converged && !changed && s.p99 < PASS_TARGET_MS;
    console.log(
      `target: one reconcile pass over ${ENDPOINTS.toLocaleString('en')} endpoints x ${WORKERS_PER_ENDPOINT} ` +
        `workers under ${PASS_TARGET_MS} ms: ${met ? 'PASS' : 'MISS'} (p99 ${formatMs(s.p99)} ms, p50 ` +
        `${formatMs(s.p50)} ms` +
        (met
          ? `, ${formatRatio(PASS_TARGET_MS / s.p99)} under`
          : `${s.p99 >= PASS_TARGET_MS ? `, ${formatMs(s.p99 - PASS_TARGET_MS)} ms over` : ''}` +
            `${setup.converged ? '' : ', did not converge'}${changed ? ', steady pass changed workers' : ''}`) +
        ')',
    );
    console.log(
      `not a target, but: converging with a probe that answers at once ${instant.converged ? 'took' : 'did not finish in'} ` +
        `${formatMs(instant.convergeMs)} ms (a above)`,
    );
    return s;
  } finally {
    await setup.dispose();
  }
}

function mib(bytes: number): string {
  return `${Math.round(bytes / 2 ** 20)} MiB`;
}
