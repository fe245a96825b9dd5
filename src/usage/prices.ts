/**
 * Pricing (pure): what a span of worker time costs. The GPU price of one GPU for an hour, times the worker's GPUs,
 * times the time, times its state's factor; a suspended worker adds the host memory it holds at its own price.
 */
import {
  DEFAULT_STATE_FACTORS,
  USAGE_STATES,
  type UsagePrices,
  type UsageState,
  type UsageTotals,
} from '../ports/usage.js';

const HOUR_MS = 3_600_000;

/** No prices: every amount is 0, and the seconds are still counted. */
export const NO_PRICES: UsagePrices = {
  currency: 'USD',
  gpuPerHour: {},
  stateFactors: DEFAULT_STATE_FACTORS,
  suspendedMemoryGBHour: 0,
};

/** What one sum of spans in one state on one GPU product costs. */
export interface PricedSpan {
  gpuProductId: string;
  state: UsageState;
  /** Worker time times its GPUs. */
  gpuMs: number;
  /** Host memory held (GB) times time (ms). */
  memoryGbMs: number;
}

function amountOf(prices: UsagePrices, span: PricedSpan): number {
  const gpu =
    ((prices.gpuPerHour[span.gpuProductId] ?? 0) * prices.stateFactors[span.state] * span.gpuMs) / HOUR_MS;
  const memory = span.state === 'suspended' ? (prices.suspendedMemoryGBHour * span.memoryGbMs) / HOUR_MS : 0;
  return gpu + memory;
}

export function emptyTotals(currency: string): UsageTotals {
  const gpuSeconds = Object.fromEntries(USAGE_STATES.map((s) => [s, 0])) as Record<UsageState, number>;
  return { gpuSeconds, timeBilledMs: 0, amount: 0, currency };
}

export function isUsageState(state: string): state is UsageState {
  return (USAGE_STATES as readonly string[]).includes(state);
}

/** Adds one sum of spans (its worker time and its priced GPU time) to `totals`. */
export function addSpan(totals: UsageTotals, prices: UsagePrices, span: PricedSpan & { ms: number }): void {
  totals.gpuSeconds[span.state] += span.gpuMs / 1000;
  totals.timeBilledMs += span.ms;
  totals.amount += amountOf(prices, span);
}
