/**
 * `UsageReader` (ports/usage.ts) over the store's grouped sums: the database sums each bucket, key, owner, GPU
 * product and state; here those few rows are priced and folded into one row per bucket and key.
 */
import type {
  UsagePrices,
  UsageQuery,
  UsageReader,
  UsageRow,
  UsageScope,
  UsageTotals,
} from '../ports/usage.js';
import type { SegmentSums, UsageSegmentRepository } from '../store/usage/usage-segments.js';
import { addSpan, emptyTotals, isUsageState } from './prices.js';

export interface LedgerReaderOptions {
  segments: Pick<UsageSegmentRepository, 'sums'>;
  prices: UsagePrices;
  clock: () => number;
}

export class LedgerReader implements UsageReader {
  readonly #o: LedgerReaderOptions;

  constructor(options: LedgerReaderOptions) {
    this.#o = options;
  }

  async query(query: UsageQuery): Promise<UsageRow[]> {
    const now = Math.min(this.#o.clock(), query.to);
    const sums = await this.#o.segments.sums({ ...query, now });
    const rows = new Map<string, UsageRow>();
    for (const sum of sums) {
      const id = `${sum.time}\u0000${sum.key}\u0000${sum.ownerId}`;
      let row = rows.get(id);
      if (!row) {
        row = { time: sum.time, key: sum.key, ownerId: sum.ownerId, ...emptyTotals(this.#o.prices.currency) };
        rows.set(id, row);
      }
      this.#add(row, sum);
    }
    return [...rows.values()];
  }

  async totals(scope: UsageScope, since: number, now: number): Promise<UsageTotals> {
    const sums = await this.#o.segments.sums({ ...scope, from: since, to: now, now, grouping: 'owner' });
    const totals = emptyTotals(this.#o.prices.currency);
    for (const sum of sums) this.#add(totals, sum);
    return totals;
  }

  #add(totals: UsageTotals, sum: SegmentSums): void {
    const { state } = sum;
    // A state this version does not know (a newer replica wrote it) counts as time, priced as nothing.
    if (!isUsageState(state)) totals.timeBilledMs += sum.ms;
    else addSpan(totals, this.#o.prices, { ...sum, state });
  }
}
