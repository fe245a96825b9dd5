/**
 * The Endpoint page's charts over time (requests by status, latency p50/p99, queue depth and wait, workers by state
 * with the desired count, cold starts with their duration, and for an endpoint that had jobs its jobs queued and in
 * progress, finished by outcome, and their delay and execution times), drawn with uPlot from `GET endpoint/metrics/history`
 * and polled so that they move live, over a range of 5 min, 1 h or 24 h (chart-range.ts: by default the smallest
 * that holds the samples there are). Each chart says its latest values in words beside it; with no sample yet, the
 * section says what the workers are doing instead.
 */
import 'uplot/dist/uPlot.min.css';
import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import { useApi } from '../api-context.js';
import { type ChartSeries, type ChartSpec, chartsOf, intervalText, timeRange } from '../chart-data.js';
import { fittingRange, historyWithin, offeredRanges } from '../chart-range.js';
import { usePoll } from '../poll.js';
import { Notice } from '../widgets.js';

const POLL_MS = 5000;
const HEIGHT = 170;

export function HistoryCharts(props: { endpointId: string; idle: string }) {
  const api = useApi();
  const history = usePoll(() => api.call((c) => c.getEndpointHistory(props.endpointId)), POLL_MS, [
    props.endpointId,
  ]);
  // The range the user picked; until then the one that fits the samples there are (chart-range.ts).
  const [picked, setPicked] = useState<number | undefined>(undefined);
  const h = history.data;
  const rangeSeconds = picked ?? (h ? fittingRange(h).seconds : undefined);
  const charts = h && rangeSeconds !== undefined ? chartsOf(historyWithin(h, rangeSeconds)) : undefined;
  const range = rangeSeconds === undefined ? '' : intervalText(rangeSeconds);
  return (
    <section aria-labelledby="charts-title">
      <div class="title-row">
        <h2 id="charts-title">
          Over time{' '}
          {h?.intervalSeconds ? (
            <span class="muted">
              (the last {range}, a sample every {intervalText(h.intervalSeconds)})
            </span>
          ) : null}
        </h2>
        {h?.intervalSeconds ? (
          <RangePicker offered={offeredRanges(h)} shown={rangeSeconds} onPick={setPicked} />
        ) : null}
      </div>
      {history.error ? <Notice kind="error">Could not refresh the charts: {history.error}</Notice> : null}
      {!h ? <p class="muted">Loading...</p> : null}
      {h && h.intervalSeconds === null ? (
        <p class="muted">This server keeps no history (no gateway here, or history.samples is 0).</p>
      ) : null}
      {h && h.intervalSeconds !== null && h.at.length === 0 ? (
        <p class="muted" data-testid="charts-empty">
          Nothing to draw yet: {props.idle}.
        </p>
      ) : null}
      {charts && charts.x.length > 0 ? (
        <div
          class="charts"
          data-samples={charts.x.length}
          data-requests={charts.requests}
          data-jobs={charts.jobs}
        >
          {charts.charts.map((spec) => (
            <Chart key={spec.id} x={charts.x} spanSeconds={rangeSeconds ?? null} spec={spec} />
          ))}
        </div>
      ) : null}
    </section>
  );
}

/** 5 min / 1 h / 24 h, the one shown pressed; one the history cannot fill is disabled and says why. */
function RangePicker(props: {
  offered: ReturnType<typeof offeredRanges>;
  shown: number | undefined;
  onPick: (seconds: number) => void;
}) {
  const why = props.offered.filter((range) => range.unavailable !== undefined);
  return (
    <div class="range-picker">
      <fieldset class="buttons range-buttons">
        <legend class="visually-hidden">Time range</legend>
        {props.offered.map((range) => (
          <button
            key={range.seconds}
            type="button"
            class="small"
            aria-pressed={range.seconds === props.shown}
            disabled={range.unavailable !== undefined}
            title={range.unavailable}
            onClick={() => props.onPick(range.seconds)}
          >
            {range.label}
          </button>
        ))}
      </fieldset>
      {why.map((range) => (
        <span key={range.seconds} class="muted small-print">
          {range.label}: {range.unavailable}
        </span>
      ))}
    </div>
  );
}

/** One uPlot chart, made when its series change, fed new data on every poll, resized with its box. */
function Chart(props: { x: number[]; spanSeconds: number | null; spec: ChartSpec }) {
  const { spec } = props;
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | undefined>(undefined);
  const shape = spec.series.map((s) => `${s.label}:${s.scale}`).join(',');
  const data = (): uPlot.AlignedData => [props.x, ...spec.series.map((s) => s.values)];

  useEffect(() => {
    const host = box.current;
    if (!host) return;
    const made = new uPlot(optionsFor(spec, host.clientWidth, props.spanSeconds), data(), host);
    showLatest(made);
    plot.current = made;
    const resize = new ResizeObserver(() => made.setSize({ width: host.clientWidth, height: HEIGHT }));
    resize.observe(host);
    return () => {
      resize.disconnect();
      made.destroy();
      plot.current = undefined;
    };
  }, [shape, props.spanSeconds]);

  useEffect(() => {
    const made = plot.current;
    if (!made) return;
    made.setData(data());
    showLatest(made);
  }, [props.x, spec]);

  return (
    <figure class="chart" data-chart={spec.id} data-points={props.x.length}>
      <figcaption>
        <strong>{spec.title}</strong> <span class="summary">{spec.summary}</span>
      </figcaption>
      <div ref={box} class="plot" role="img" aria-label={`${spec.title}: ${spec.summary}`} />
    </figure>
  );
}

/** The legend says the latest sample's values while the pointer is not over the chart (uPlot's own: `--`). */
function showLatest(u: uPlot): void {
  if (u.cursor.idx !== null && u.cursor.idx !== undefined) return;
  const last = (u.data[0]?.length ?? 0) - 1;
  if (last >= 0) u.setLegend({ idx: last }, false);
}

/** The time axis's range, on the plot's root (`data-x-min`, `data-x-max`, seconds): what the browser test reads. */
function sayTimeRange(u: uPlot, scale: string): void {
  if (scale !== 'x') return;
  const { min, max } = u.scales.x ?? {};
  if (min !== undefined && max !== undefined) {
    u.root.dataset.xMin = String(min);
    u.root.dataset.xMax = String(max);
  }
}

function optionsFor(spec: ChartSpec, width: number, spanSeconds: number | null): uPlot.Options {
  const fromZero: uPlot.Range.Function = (_u, _min, max) => [0, Math.max(1, max ?? 1) * 1.1];
  const axis = (label: string, scale: 'y' | 'y2'): uPlot.Axis => ({
    scale,
    label,
    labelSize: 18,
    size: 46,
    side: scale === 'y' ? 3 : 1,
    grid: { show: scale === 'y', stroke: '#eaeef2' },
    values: (_u, ticks) => ticks.map((v) => (Number.isInteger(v) ? String(v) : v.toFixed(1))),
  });
  return {
    width: Math.max(200, width),
    height: HEIGHT,
    cursor: { drag: { x: false, y: false } },
    legend: { live: true },
    scales: {
      x: { time: true, range: (u, min, max) => timeRange(u.data[0] ?? [], spanSeconds) ?? [min, max] },
      y: { range: fromZero },
      ...(spec.y2 ? { y2: { range: fromZero } } : {}),
    },
    axes: [{ grid: { stroke: '#eaeef2' } }, axis(spec.y, 'y'), ...(spec.y2 ? [axis(spec.y2, 'y2')] : [])],
    series: [{}, ...spec.series.map(seriesFor)],
    hooks: { setCursor: [showLatest], setScale: [sayTimeRange] },
  };
}

function seriesFor(s: ChartSeries): uPlot.Series {
  const paths =
    s.kind === 'bars'
      ? uPlot.paths.bars?.({ size: [0.6, 24] })
      : s.kind === 'steps'
        ? uPlot.paths.stepped?.({ align: 1 })
        : undefined;
  return {
    label: s.label,
    scale: s.scale,
    stroke: s.color,
    width: 2,
    ...(s.kind === 'bars' ? { fill: `${s.color}99` } : {}),
    ...(paths ? { paths } : {}),
    points: { show: false },
    spanGaps: false,
  };
}
