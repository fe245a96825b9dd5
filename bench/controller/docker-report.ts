// Part 2's report: the controller runs beside both baselines, per run and as medians, with the ratios.
import { formatMs, formatRatio, loadAverage, table } from '../support.js';
import type { ControllerRun } from './controller-run.js';
import { SERVE_INTERVAL_MS } from './settings.js';

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[mid] ?? Number.NaN)
    : ((sorted[mid - 1] ?? Number.NaN) + (sorted[mid] ?? Number.NaN)) / 2;
}

export function reportDocker(
  controllerRuns: ControllerRun[],
  cliRuns: number[],
  apiRuns: number[],
  problems: string[],
): void {
  const rows: string[][] = [];
  const n = Math.max(controllerRuns.length, cliRuns.length, apiRuns.length);
  const cell = (v: number | undefined) => (v === undefined ? '-' : formatMs(v));
  for (let i = 0; i < n; i++) {
    const c = controllerRuns[i];
    rows.push([
      String(i + 1),
      cell(c?.decidedMs),
      cell(c?.startedMs),
      cell(c?.healthyMs),
      cell(c?.runningMs),
      cell(c && c.runningMs - c.decidedMs),
      cell(cliRuns[i]),
      cell(apiRuns[i]),
      cell(c?.removedMs),
    ]);
  }
  const med = (pick: (r: ControllerRun) => number) => median(controllerRuns.map(pick));
  rows.push([
    'median',
    formatMs(med((r) => r.decidedMs)),
    formatMs(med((r) => r.startedMs)),
    formatMs(med((r) => r.healthyMs)),
    formatMs(med((r) => r.runningMs)),
    formatMs(med((r) => r.runningMs - r.decidedMs)),
    formatMs(median(cliRuns)),
    formatMs(median(apiRuns)),
    formatMs(med((r) => r.removedMs)),
  ]);
  console.log(
    '\ntimes in ms from the endpoint written to the store (controller) or from the start command (baselines)',
  );
  console.log(
    table(
      [
        'run',
        'ctl: decided',
        'ctl: started',
        'ctl: healthy',
        'ctl: running (API)',
        'ctl: seen->running',
        'docker run -d',
        'engine API',
        'delete->removed',
      ],
      rows,
    ),
  );
  const running = med((r) => r.runningMs);
  console.log(
    `create to running (median ${formatMs(running)} ms) / docker run -d to healthy (median ` +
      `${formatMs(median(cliRuns))} ms): ${formatRatio(running / median(cliRuns))}; / engine API create+start ` +
      `to healthy (median ${formatMs(median(apiRuns))} ms): ${formatRatio(running / median(apiRuns))}; ` +
      `the controller adds ${formatMs(running - median(apiRuns))} ms to the engine API floor`,
  );
  const seen = med((r) => r.runningMs - r.decidedMs);
  console.log(
    `from the pass that saw the endpoint to running (median ${formatMs(seen)} ms) / engine API floor: ` +
      `${formatRatio(seen / median(apiRuns))}, ${formatMs(seen - median(apiRuns))} ms more`,
  );
  console.log(
    'ctl: decided = the pass that saw the new endpoint (the write pokes the controller, as the API does; each ' +
      `create is made at a random point of its ${SERVE_INTERVAL_MS} ms interval); seen->running = running - decided; started = DockerRuntime.create returned; healthy = the probe passed ` +
      "(probes every 50 ms while starting, serve's setting); running = the store row says running and healthy",
  );
  for (const problem of problems) console.log(`PROBLEM: ${problem}`);
  console.log(`load average after: ${loadAverage()}`);
}
