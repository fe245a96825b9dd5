/**
 * The charts' time range (pure, tested): the ranges the Endpoint page offers (5 min, 1 h, 24 h), which of them the
 * server's history can fill, the one shown by default (the smallest that holds every sample there is, so that a
 * server up 3 minutes is not drawn as a sliver at the right of an hour), and the history cut to a range.
 */
import type { WireEndpointHistory } from '../../src/client/index.js';
import { intervalText } from './chart-data.js';

export interface TimeRange {
  seconds: number;
  label: string;
}

export const TIME_RANGES: readonly TimeRange[] = [
  { seconds: 300, label: '5 min' },
  { seconds: 3600, label: '1 h' },
  { seconds: 86_400, label: '24 h' },
];

export interface OfferedRange extends TimeRange {
  /** Why the history cannot fill this range; undefined where it can. */
  unavailable?: string;
}

type HistoryLength = Pick<WireEndpointHistory, 'intervalSeconds' | 'capacity'>;

/** How long the history keeps samples, in seconds (its interval x its samples); 0 where it keeps none. */
export function keptSeconds(history: HistoryLength): number {
  return (history.intervalSeconds ?? 0) * history.capacity;
}

/**
 * Every range, each unavailable where the history keeps no more than the range below it: with the default one
 * hour kept (`history.samples` x `history.intervalSeconds`), 24 h would draw that same hour on a longer axis.
 */
export function offeredRanges(history: HistoryLength): OfferedRange[] {
  const kept = keptSeconds(history);
  return TIME_RANGES.map((range, i) => {
    const below = TIME_RANGES[i - 1];
    if (below === undefined || kept > below.seconds) return range;
    return {
      ...range,
      unavailable: `this server keeps ${intervalText(kept)} of history (history.samples x history.intervalSeconds)`,
    };
  });
}

/**
 * The range shown until the user picks one: the smallest offered range that holds every sample, from the first to
 * the last; the largest offered where none holds them all.
 */
export function fittingRange(history: HistoryLength & Pick<WireEndpointHistory, 'at'>): TimeRange {
  const first = history.at[0];
  const last = history.at[history.at.length - 1];
  const spanSeconds = first === undefined || last === undefined ? 0 : (last - first) / 1000;
  const offered = offeredRanges(history).filter((range) => range.unavailable === undefined);
  const fits = offered.find((range) => spanSeconds <= range.seconds);
  return fits ?? offered[offered.length - 1] ?? (TIME_RANGES[0] as TimeRange);
}

/**
 * The history's samples of the last `seconds` ending at its latest sample: every column cut alike, so that what
 * each chart says ("in the chart") is about the range drawn.
 */
export function historyWithin(history: WireEndpointHistory, seconds: number): WireEndpointHistory {
  const last = history.at[history.at.length - 1];
  if (last === undefined) return history;
  const from = history.at.findIndex((at) => at >= last - seconds * 1000);
  return from <= 0 ? history : (columnsFrom(history, from) as WireEndpointHistory);
}

/** `value` with every array in it (at any depth) cut to its entries from `from` on; other values as they are. */
function columnsFrom(value: unknown, from: number): unknown {
  if (Array.isArray(value)) return value.slice(from);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, columnsFrom(inner, from)]));
}
