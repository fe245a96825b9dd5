/**
 * `RouteFeed`: every replica's side of the shared routes (several replicas on PostgreSQL). It fills this replica's
 * routing table, which its gateway reads, from the `routes` table the leader writes: at each notification of the
 * change feed at once, every `pollMs` while the feed is down, and every `safetyMs` while it is up. A refresh lists
 * every row's seq and re-reads only the rows whose seq moved. Each worker is given this replica's share of its
 * slots (slot-shares.ts) when shares are configured, and the table is republished when the shares change.
 */

import type { Endpoint } from '../domain/endpoint.js';
import type { Timers } from '../ports/clock.js';
import type { EndpointCondition, RoutableWorker } from '../ports/routing-view.js';
import type { RouteRepository } from '../store/cluster/routes.js';
import { decodeRoute } from './route-codec.js';

/** The routing table the feed fills (controller/routing-table.ts `RoutingTable`). */
export interface RouteSink {
  publish(
    endpoints: Iterable<Endpoint>,
    routable: Map<string, readonly RoutableWorker[]>,
    conditions: ReadonlyMap<string, EndpointCondition>,
  ): void;
}

/** This replica's share of each worker's slots now. */
export interface SlotShares {
  share(workerId: string, capacity: number): number;
}

export interface RouteFeedOptions {
  routes: Pick<RouteRepository, 'seqs' | 'read'>;
  sink: RouteSink;
  /** Absent: every worker with all its slots (one replica). */
  shares?: SlotShares;
  timers: Timers;
  /** Between refreshes while the change feed is down. */
  pollMs: number;
  /** Between refreshes while it is up (a notification lost in a reconnect is found by then at the latest). */
  safetyMs: number;
  logger: { warn(fields: object, message: string): void; info(fields: object, message: string): void };
}

interface Known {
  seq: number;
  endpoint: Endpoint;
  workers: readonly RoutableWorker[];
  condition: EndpointCondition | undefined;
}

export class RouteFeed {
  readonly #o: RouteFeedOptions;
  #known = new Map<string, Known>();
  #feedUp = false;
  #timer: unknown;
  #refreshing: Promise<void> | undefined;
  #again = false;
  #closed = false;
  #failing = false;
  #refreshes = 0;

  constructor(options: RouteFeedOptions) {
    this.#o = options;
  }

  /** The first refresh, awaited (a failure is retried by the poll); then the timers. */
  async start(): Promise<void> {
    await this.refresh();
  }

  /** How many refreshes completed (tests and the bench wait on it). */
  get refreshes(): number {
    return this.#refreshes;
  }

  /** The change feed went up or down: while down, poll; when back up, re-read what a lost notification said. */
  feedState(up: boolean): void {
    this.#feedUp = up;
    if (up) void this.refresh();
    else this.#schedule();
  }

  /** Reads the rows that changed now; one refresh at a time, and one more after it if asked meanwhile. */
  refresh(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    if (this.#refreshing) {
      this.#again = true;
      return this.#refreshing;
    }
    this.#refreshing = this.#refreshOnce().finally(() => {
      this.#refreshing = undefined;
      if (this.#again) {
        this.#again = false;
        void this.refresh();
      } else {
        this.#schedule();
      }
    });
    return this.#refreshing;
  }

  /** The shares changed: the table again, from what is known, with the new shares. */
  reshare(): void {
    this.#publish();
  }

  close(): void {
    this.#closed = true;
    this.#o.timers.clearTimeout(this.#timer);
  }

  #schedule(): void {
    if (this.#closed) return;
    this.#o.timers.clearTimeout(this.#timer);
    this.#timer = this.#o.timers.setTimeout(
      () => void this.refresh(),
      this.#feedUp ? this.#o.safetyMs : this.#o.pollMs,
    );
    (this.#timer as { unref?: () => void } | undefined)?.unref?.();
  }

  async #refreshOnce(): Promise<void> {
    try {
      const seqs = await this.#o.routes.seqs();
      const stale = [...seqs].filter(([id, seq]) => this.#known.get(id)?.seq !== seq).map(([id]) => id);
      const gone = [...this.#known.keys()].some((id) => !seqs.has(id));
      if (stale.length === 0 && !gone) {
        this.#done();
        return;
      }
      const rows = stale.length > 0 ? await this.#o.routes.read(stale) : [];
      const known = new Map<string, Known>();
      for (const [id, entry] of this.#known) if (seqs.has(id)) known.set(id, entry);
      for (const row of rows) known.set(row.endpointId, { seq: row.seq, ...decodeRoute(row) });
      this.#known = known;
      this.#publish();
      this.#done();
    } catch (error) {
      if (!this.#failing) this.#o.logger.warn({ err: error }, 'could not read the routes; polling');
      this.#failing = true;
    }
  }

  #done(): void {
    if (this.#failing) this.#o.logger.info({}, 'the routes can be read again');
    this.#failing = false;
    this.#refreshes += 1;
  }

  #publish(): void {
    const { shares } = this.#o;
    const routable = new Map<string, readonly RoutableWorker[]>();
    const conditions = new Map<string, EndpointCondition>();
    const endpoints: Endpoint[] = [];
    for (const [id, entry] of this.#known) {
      endpoints.push(entry.endpoint);
      if (entry.condition) conditions.set(id, entry.condition);
      if (entry.workers.length === 0) continue;
      if (!shares) {
        routable.set(id, entry.workers);
        continue;
      }
      const capacity = entry.endpoint.spec.workers.maxConcurrent;
      routable.set(
        id,
        entry.workers.map((w) => ({ ...w, slots: shares.share(w.id, capacity) })),
      );
    }
    this.#o.sink.publish(endpoints, routable, conditions);
  }
}
