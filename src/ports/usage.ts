/**
 * The usage ledger's view for those that read it (issue 32): how much of the GPUs an owner's workers held, per
 * state, priced. The ledger (`usage/`, over the store) writes segments from the workers' state changes; budgets,
 * the billing route, the CLI, the dashboard and the metrics read through this port.
 */

/** The states a worker's time is counted in. `downloading` (its models fetched before a GPU is held) costs no GPU. */
export const USAGE_STATES = ['downloading', 'starting', 'active', 'idle', 'frozen', 'suspended'] as const;
export type UsageState = (typeof USAGE_STATES)[number];

/** Seconds and money over some span; amounts in the configured currency (0 where no price is set). */
export interface UsageTotals {
  /** GPU-seconds: a worker's seconds times its GPUs, per state. */
  gpuSeconds: Record<UsageState, number>;
  /** Worker time in milliseconds (RunPod's `timeBilledMs`), every state. */
  timeBilledMs: number;
  amount: number;
  currency: string;
}

export type UsageGrouping = 'endpoint' | 'gpu' | 'owner' | 'state';
export type UsageBucket = 'hour' | 'day' | 'week' | 'month';

export interface UsageQuery {
  /** Only this owner's workers; absent: every owner's (an admin's question). */
  ownerId?: string;
  endpointId?: string;
  /** Epoch milliseconds, inclusive start and exclusive end; open segments count up to `to` or now. */
  from: number;
  to: number;
  bucket: UsageBucket;
  grouping: UsageGrouping;
}

/** One bucket of one group: `key` is the endpoint id, the GPU product id, the owner id or the state. */
export interface UsageRow extends UsageTotals {
  /** The bucket's start, epoch milliseconds (UTC). */
  time: number;
  key: string;
  ownerId: string | null;
}

export interface UsageReader {
  /** The rows of a query, by bucket then key. */
  query(query: UsageQuery): Promise<UsageRow[]>;
  /** An owner's totals from `since` until `now`, open segments included up to `now` (what a budget reads). */
  ownerTotals(ownerId: string, since: number, now: number): Promise<UsageTotals>;
}
