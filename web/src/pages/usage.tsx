/**
 * The Usage page (issue 32): the usage ledger through RunPod's billing route (`GET billing/endpoints`, per UTC day),
 * over the last 7, 30 (by default) or 90 days, by endpoint or by worker state: a stacked bar chart of GPU-hours per
 * day, a table of worker hours, GPU-hours and amount per endpoint or state with their total, and a CSV download of
 * the table's rows (the columns `corral usage --csv` writes). The figures are usage-view.ts's.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import { usageCsv } from '../../../src/client/index.js';
import { useApi } from '../api-context.js';
import { usePoll } from '../poll.js';
import {
  DEFAULT_USAGE_DAYS,
  rangeStart,
  summedRows,
  USAGE_RANGES,
  type UsageBy,
  type UsageChart,
  usageChart,
  usageQuery,
  usageTable,
} from '../usage-view.js';
import { Notice } from '../widgets.js';

const POLL_MS = 30_000;
const HEIGHT = 220;
const BY_LABELS: Record<UsageBy, string> = { endpointId: 'Endpoint', state: 'State' };

export function UsagePage() {
  const api = useApi();
  const [days, setDays] = useState(DEFAULT_USAGE_DAYS);
  const [by, setBy] = useState<UsageBy>('endpointId');
  const read = usePoll(
    async () => {
      const now = Date.now();
      const rows = await api.call((c) => c.getBilling(usageQuery(now, days, by)));
      return { rows, by, days, from: rangeStart(now, days) };
    },
    POLL_MS,
    [days, by],
  );
  // The endpoints' names beside their ids (a deleted endpoint's row has its id only).
  const names = usePoll(
    async () => {
      const list = await api.call((c) => c.listEndpoints());
      return new Map(list.endpoints.map((e) => [e.id, e.name || e.appName]));
    },
    POLL_MS,
    [],
  );
  // What was read for the options shown: no table of states under the Endpoint toggle while the states load.
  const shown = read.data && read.data.by === by && read.data.days === days ? read.data : undefined;
  const fromIso = shown ? new Date(shown.from).toISOString() : '';
  const summed = shown ? summedRows(shown.rows, by, fromIso) : [];
  const table = usageTable(summed, by);
  const chart = shown ? usageChart(shown.rows, summed, by, shown.from, days) : undefined;
  const download = () => {
    const blob = new Blob([usageCsv(summed, by)], { type: 'text/csv' });
    const link = document.createElement('a');
    link.href = URL.createObjectURL(blob);
    link.download = `corral-usage-by-${by === 'state' ? 'state' : 'endpoint'}-${fromIso.slice(0, 10)}-${days}d.csv`;
    link.click();
    setTimeout(() => URL.revokeObjectURL(link.href), 1000);
  };
  return (
    <main>
      <div class="title-row">
        <h1>Usage</h1>
        <button type="button" class="small" disabled={!shown} onClick={download}>
          Download CSV
        </button>
      </div>
      <p class="muted">
        Your workers' time from the usage ledger, per UTC day: GPU-hours are worker hours times the worker's
        GPUs, the amount as the server's prices say (0 where none is set).
      </p>
      <div class="toolbar">
        <Toggle
          legend="Group by"
          options={(Object.keys(BY_LABELS) as UsageBy[]).map((value) => ({ value, label: BY_LABELS[value] }))}
          shown={by}
          onPick={setBy}
        />
        <Toggle
          legend="Time range"
          options={USAGE_RANGES.map((range) => ({ value: range.days, label: range.label }))}
          shown={days}
          onPick={setDays}
        />
      </div>
      {read.error ? <Notice kind="error">Could not read the usage: {read.error}</Notice> : null}
      {!shown ? <p class="muted">Loading...</p> : null}
      {shown && summed.length === 0 ? (
        <p class="muted" data-testid="usage-empty">
          No usage in the last {days} days.
        </p>
      ) : null}
      {chart && summed.length > 0 ? <StackedChart chart={chart} /> : null}
      {table.total ? (
        <table class="cards" aria-label={`Usage by ${BY_LABELS[by].toLowerCase()}`} data-testid="usage-table">
          <thead>
            <tr>
              <th scope="col">{BY_LABELS[by]}</th>
              <th scope="col" class="number">
                Worker hours
              </th>
              <th scope="col" class="number">
                GPU hours
              </th>
              <th scope="col" class="number">
                Amount
              </th>
            </tr>
          </thead>
          <tbody>
            {table.rows.map((row) => (
              <tr key={row.key} data-key={row.key}>
                <td data-label={BY_LABELS[by]}>
                  <code>{row.key}</code>
                  {names.data?.get(row.key) ? <span class="muted"> {names.data.get(row.key)}</span> : null}
                </td>
                <td data-label="Worker hours" class="number">
                  {row.workerHours}
                </td>
                <td data-label="GPU hours" class="number">
                  {row.gpuHours}
                </td>
                <td data-label="Amount" class="number nowrap">
                  {row.amount}
                </td>
              </tr>
            ))}
          </tbody>
          <tfoot>
            <tr data-key="total">
              <td data-label={BY_LABELS[by]}>
                <strong>{table.total.key}</strong>
              </td>
              <td data-label="Worker hours" class="number">
                {table.total.workerHours}
              </td>
              <td data-label="GPU hours" class="number">
                {table.total.gpuHours}
              </td>
              <td data-label="Amount" class="number nowrap">
                {table.total.amount}
              </td>
            </tr>
          </tfoot>
        </table>
      ) : null}
    </main>
  );
}

/** A row of buttons of which one is pressed, as the charts' range picker. */
function Toggle<T extends string | number>(props: {
  legend: string;
  options: { value: T; label: string }[];
  shown: T;
  onPick: (value: T) => void;
}) {
  return (
    <fieldset class="buttons range-buttons range-picker">
      <legend class="visually-hidden">{props.legend}</legend>
      {props.options.map((option) => (
        <button
          key={option.value}
          type="button"
          class="small"
          aria-pressed={option.value === props.shown}
          onClick={() => props.onPick(option.value)}
        >
          {option.label}
        </button>
      ))}
    </fieldset>
  );
}

/**
 * GPU-hours per day as stacked bars: each series drawn as the top of its part of the stack, the tallest first, so
 * that the ones below paint over it; the legend says each key's own value.
 */
function StackedChart(props: { chart: UsageChart }) {
  const { chart } = props;
  const box = useRef<HTMLDivElement>(null);
  const drawn = [...chart.series].reverse();
  const shape = drawn.map((s) => `${s.label}:${s.color}`).join(',');
  useEffect(() => {
    const host = box.current;
    if (!host) return;
    const bars = uPlot.paths.bars?.({ size: [0.7, 40] });
    const made = new uPlot(
      {
        width: Math.max(200, host.clientWidth),
        height: HEIGHT,
        cursor: { drag: { x: false, y: false } },
        scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(0.001, max ?? 0) * 1.1] } },
        axes: [
          { grid: { stroke: '#eaeef2' } },
          {
            label: 'GPU-hours',
            labelSize: 18,
            size: 56,
            grid: { stroke: '#eaeef2' },
            values: (_u, ticks) => ticks.map((v) => String(Number(v.toPrecision(3)))),
          },
        ],
        series: [
          {},
          ...drawn.map((s) => ({
            label: s.label,
            stroke: s.color,
            fill: s.color,
            width: 1,
            points: { show: false },
            ...(bars ? { paths: bars } : {}),
            // Under the pointer that day's GPU-hours, else the whole range's.
            value: (_u: uPlot, _v: number | null, _series: number, idx: number | null) =>
              (idx === null ? s.values.reduce((a, b) => a + b, 0) : (s.values[idx] ?? 0)).toFixed(3),
          })),
        ],
      },
      [chart.x, ...drawn.map((s) => s.stacked)],
      host,
    );
    const resize = new ResizeObserver(() => made.setSize({ width: host.clientWidth, height: HEIGHT }));
    resize.observe(host);
    return () => {
      resize.disconnect();
      made.destroy();
    };
  }, [shape, chart]);
  const total = chart.series.reduce((sum, s) => sum + s.values.reduce((a, b) => a + b, 0), 0);
  const summary = `${total.toFixed(3)} GPU-hours over ${chart.x.length} days, ${chart.series.length} ${
    chart.series.length === 1 ? 'part' : 'parts'
  } stacked`;
  return (
    <figure class="chart" data-chart="usage" data-series={chart.series.length}>
      <figcaption>
        <strong>GPU-hours per day</strong> <span class="summary">{summary}</span>
      </figcaption>
      <div ref={box} class="plot" role="img" aria-label={`GPU-hours per day: ${summary}`} />
    </figure>
  );
}
