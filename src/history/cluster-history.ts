/**
 * `ClusterHistory`: the dashboard's history with several replicas on PostgreSQL (docs/operations.md, "What the
 * dashboard shows with replicas"). It takes this replica's samples at the interval's boundaries (so that every
 * replica's samples of one interval share a slot), writes them to the store in one statement per interval, and
 * answers `GET endpoint/metrics/history` and `recent` by reading every replica's rows of the endpoint and merging
 * them (history-merge.ts): any replica answers the same. A slot is answered `settleMs` after its end, once every
 * replica has written it. The leader also prunes the rows past the history's length. `app/build-replica.ts` builds it only with
 * several replicas; one process answers from its own rings, as before.
 */
import type { Timers } from '../ports/clock.js';
import type { EndpointHistory, RecentTraffic } from '../ports/traffic.js';
import type { HistorySample } from './history.js';
import { decodeFigures, encodeFigures } from './history-codec.js';
import { leaderDesired, mergeHistory, mergeRecent, type ReplicaSlot } from './history-merge.js';

/** The store's `history_samples` (store/cluster/history-samples.ts), as this side uses it. */
export interface SharedSamples {
  write(
    replicaId: string,
    rows: readonly { endpointId: string; slot: number; term: number | null; payload: string }[],
  ): Promise<void>;
  read(
    endpointId: string,
    from: number,
    to: number,
  ): Promise<{ replicaId: string; slot: number; term: number | null; payload: string }[]>;
  prune(before: number): Promise<number>;
}

export interface ClusterHistoryOptions {
  replicaId: string;
  /** This replica's history (history.ts): sampled here, at the boundaries, instead of by its own timer. */
  history: { sample(collect: boolean): HistorySample[] };
  samples: SharedSamples;
  /** The fencing token of the term this replica leads now; null while it does not lead. */
  term: () => number | null;
  /** This replica's autoscaler's desired count (answered as is while it leads). */
  localDesired: (endpointId: string) => number | undefined;
  clock: () => number;
  timers: Timers;
  intervalSeconds: number;
  /** Samples kept per endpoint (the history's length: 360 at 10 s). */
  capacity: number;
  /** The window of `recent`, in seconds; default 300. */
  recentSeconds?: number;
  /** A slot is answered this long after its end (every replica has written it by then); default 2000. */
  settleMs?: number;
  logger: { warn(fields: object, message: string): void };
}

const DEFAULT_SETTLE_MS = 2_000;

export class ClusterHistory {
  readonly #o: ClusterHistoryOptions;
  readonly #intervalMs: number;
  readonly #settleMs: number;
  readonly #recentSlots: number;
  #timer: unknown;
  #running = false;
  #writing: Promise<void> = Promise.resolve();
  #failing = false;

  constructor(options: ClusterHistoryOptions) {
    this.#o = options;
    this.#intervalMs = options.intervalSeconds * 1000;
    this.#settleMs = options.settleMs ?? DEFAULT_SETTLE_MS;
    this.#recentSlots = Math.min(
      options.capacity,
      Math.max(1, Math.ceil((options.recentSeconds ?? 300) / options.intervalSeconds)),
    );
  }

  /** Samples and publishes at every interval's boundary until `stop`. */
  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#schedule();
  }

  /** Stops sampling; resolves once the last write ended. */
  async stop(): Promise<void> {
    this.#running = false;
    if (this.#timer !== undefined) this.#o.timers.clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#writing;
  }

  #schedule(): void {
    const now = this.#o.clock();
    // The next boundary, at least half an interval away: a timer that fired a little early does not sample twice.
    const next = (Math.round(now / this.#intervalMs) + 1) * this.#intervalMs;
    const timer = this.#o.timers.setTimeout(() => {
      // Labelled with the boundary it was set for, however late it fires: two samples never share a slot.
      void this.publish(next);
      if (this.#running) this.#schedule();
    }, next - now);
    (timer as { unref?: () => void } | undefined)?.unref?.();
    this.#timer = timer;
  }

  /**
   * Takes this replica's sample and writes it under `slot` (by default the nearest boundary's; the timer passes the
   * one it was set for, tests call it directly); resolves once written (a failed write is logged, and that slot
   * lacks this replica's figures).
   */
  publish(slot = Math.round(this.#o.clock() / this.#intervalMs) * this.#intervalMs): Promise<void> {
    const term = this.#o.term();
    const rows = this.#o.history.sample(true).map((s) => ({
      endpointId: s.endpointId,
      slot,
      term,
      payload: encodeFigures(s.figures, term !== null),
    }));
    const write = async () => {
      try {
        if (rows.length > 0) await this.#o.samples.write(this.#o.replicaId, rows);
        // Rows past the history's length go; the leader prunes for every replica.
        if (term !== null) await this.#o.samples.prune(slot - this.#o.capacity * this.#intervalMs);
        this.#failing = false;
      } catch (error) {
        if (!this.#failing) this.#o.logger.warn({ err: error }, 'could not write the history samples');
        this.#failing = true;
      }
    };
    // One write at a time, in slot order.
    this.#writing = this.#writing.then(write);
    return this.#writing;
  }

  /** The newest slot answered now: the last boundary at least `settleMs` ago. */
  #settled(): number {
    return Math.floor((this.#o.clock() - this.#settleMs) / this.#intervalMs) * this.#intervalMs;
  }

  async #read(endpointId: string, slots: number, to: number): Promise<ReplicaSlot[]> {
    const rows = await this.#o.samples.read(endpointId, to - (slots - 1) * this.#intervalMs, to);
    const read: ReplicaSlot[] = [];
    for (const row of rows) {
      const figures = decodeFigures(row.payload);
      if (figures) read.push({ replicaId: row.replicaId, slot: row.slot, term: row.term, figures });
    }
    return read;
  }

  /** The endpoint's history over every replica (empty where none has a sample of it in the history's length). */
  async of(endpointId: string): Promise<EndpointHistory> {
    const rows = await this.#read(endpointId, this.#o.capacity, this.#settled());
    return mergeHistory(rows, { intervalSeconds: this.#o.intervalSeconds, capacity: this.#o.capacity });
  }

  /** Requests and latency over the last minutes' slots, every replica's; undefined where none has any. */
  async recent(endpointId: string): Promise<RecentTraffic | undefined> {
    return mergeRecent(
      await this.#read(endpointId, this.#recentSlots, this.#settled()),
      this.#o.intervalSeconds,
    );
  }

  /**
   * The autoscaler's desired count: this replica's own while it leads, else the leader's newest sample of the
   * endpoint, when it is at most two intervals old (undefined otherwise, or where it had not decided).
   */
  async desired(endpointId: string): Promise<number | undefined> {
    if (this.#o.term() !== null) return this.#o.localDesired(endpointId);
    const newest = Math.floor(this.#o.clock() / this.#intervalMs) * this.#intervalMs;
    const since = newest - 2 * this.#intervalMs;
    const found = leaderDesired(await this.#read(endpointId, 3, newest), since);
    return found?.desired ?? undefined;
  }
}
