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

/** Whose workers a total is of: an owner's, an endpoint's; absent fields do not narrow it. */
export interface UsageScope {
  ownerId?: string;
  endpointId?: string;
}

export interface UsageReader {
  /** The rows of a query, by bucket then key. */
  query(query: UsageQuery): Promise<UsageRow[]>;
  /**
   * The totals of an owner's or an endpoint's workers (or both, or every worker) from `since` until `now`, open
   * segments included up to `now`: what a budget reads, and an endpoint's metrics.
   */
  totals(scope: UsageScope, since: number, now: number): Promise<UsageTotals>;
}

/** Worker time one process counted, of one owner's endpoint on one GPU product in one state (for `/metrics`). */
export interface ObservedUsage {
  ownerId: string;
  endpointId: string;
  gpuProductId: string;
  state: UsageState;
  /** Worker time. */
  ms: number;
  /** Worker time times its GPUs. */
  gpuMs: number;
  /** Host memory held (GB) times time (ms). */
  memoryGbMs: number;
}

/** The defaults: a GPU held costs the same whatever it does; a suspended worker holds no GPU. */
export const DEFAULT_STATE_FACTORS: Readonly<Record<UsageState, number>> = {
  downloading: 0,
  starting: 1,
  active: 1,
  idle: 1,
  frozen: 1,
  suspended: 0,
};

/** The prices of the config file's `usage:` (config/file.ts); amounts are 0 where a GPU product has no price. */
export interface UsagePrices {
  currency: string;
  /** Per GPU product id: the price of one GPU for an hour. */
  gpuPerHour: Readonly<Record<string, number>>;
  /** Per state: the factor of the GPU price (active, idle, starting and frozen 1; suspended and downloading 0). */
  stateFactors: Readonly<Record<UsageState, number>>;
  /** The price of one GB of host memory held for an hour by a suspended worker (its GPU state kept there). */
  suspendedMemoryGBHour: number;
}

/** A worker's state as the ledger counts it: one of `USAGE_STATES`, or `closed` (it holds nothing any more). */
export type WorkerUsageState = UsageState | 'closed';

/** What a worker holds while it is counted. */
export interface WorkerHolding {
  workerId: string;
  ownerId: string;
  endpointId: string;
  /** The product id of its GPUs ('' when it has none). */
  gpuProductId: string;
  gpuCount: number;
  hostMemoryBytes: number;
}

/**
 * Where the leading controller tells each worker's usage state as it changes (`usage/`'s recorder implements it):
 * the controller calls it from its state changes, the gateway and the jobs when a worker's work in flight starts
 * or ends. Calls are cheap (memory only); the ledger writes them in batches.
 */
export interface WorkerUsageSink {
  /** The worker's lifecycle state as the ledger counts it (`running` is told as `idle`: in-flight work decides). */
  workerState(holding: WorkerHolding, state: WorkerUsageState, at: number): void;
  /** The worker's requests and jobs in flight, each time the count changes between 0 and more. */
  workerBusy(workerId: string, busy: boolean, at: number): void;
  /** Every worker the controller has after a whole pass: any other counted one ended unwatched (closed at `at`). */
  workersKnown(workerIds: ReadonlySet<string>, at: number): void;
}
