/**
 * `RoutePublisher`: the leader's side of the routes every replica's gateway shares. During one term it copies what
 * the controller publishes to its routing table into the `routes` table, in the term's fenced transaction (a
 * deposed leader writes nothing), and the commit notifies every replica. Only the rows that changed are written; a
 * term writes nothing before its controller's first whole publication (the table still holds what a previous term
 * or nobody published), and then makes the store match it exactly (rows of endpoints it does not know go).
 */

import type { Endpoint } from '../domain/endpoint.js';
import { nextTurn, type Timers } from '../ports/clock.js';
import type { EndpointCondition, RoutableWorker } from '../ports/routing-view.js';
import { LeaseLostError, type LeaseRepository } from '../store/cluster/leases.js';
import type { RouteChange, RouteRepository } from '../store/cluster/routes.js';
import type { TermFence } from './elector.js';
import { encodeCondition, encodeEndpoint, encodeWorkers } from './route-codec.js';

/** What the publisher reads of the controller's routing table (controller/routing-table.ts `RoutingTable`). */
export interface PublishedRoutes {
  endpoints(): Iterable<Endpoint>;
  routableWorkers(endpointId: string): readonly RoutableWorker[];
  conditionOf(endpointId: string): EndpointCondition | undefined;
  onChange(listener: () => void): () => void;
  readonly publications: number;
}

export interface RoutePublisherOptions {
  table: PublishedRoutes;
  store: { routes: Pick<RouteRepository, 'seqs' | 'write'>; leases: Pick<LeaseRepository, 'fenced'> };
  /** The channel every replica's feed listens on. */
  channel: string;
  timers: Timers;
  logger: { warn(fields: object, message: string): void };
  /** Between tries of a write that failed. */
  retryMs?: number;
}

interface Written {
  endpoint: string;
  workers: string;
  condition: string | null;
}

export class RoutePublisher {
  readonly #o: RoutePublisherOptions;
  #term: { fence: TermFence; from: number; written: Map<string, Written> | undefined } | undefined;
  #unsubscribe: (() => void) | undefined;
  #writing: Promise<void> | undefined;
  #dirty = false;
  #retry: unknown;
  #cancelTurn: (() => void) | undefined;
  #failing = false;

  constructor(options: RoutePublisherOptions) {
    this.#o = options;
  }

  /** A term begins: from the controller's next whole publication on, the store follows the table. */
  begin(fence: TermFence): void {
    this.end();
    this.#term = { fence, from: this.#o.table.publications, written: undefined };
    this.#unsubscribe = this.#o.table.onChange(() => this.#schedule());
  }

  /** The term is over: nothing more is written. */
  end(): void {
    this.#unsubscribe?.();
    this.#unsubscribe = undefined;
    this.#term = undefined;
    this.#cancelTurn?.();
    this.#cancelTurn = undefined;
    this.#o.timers.clearTimeout(this.#retry);
  }

  /** Resolves once no write is under way. */
  async settled(): Promise<void> {
    while (this.#writing) await this.#writing;
  }

  #schedule(): void {
    const term = this.#term;
    if (!term || this.#o.table.publications <= term.from) return;
    this.#dirty = true;
    // Changes of one turn (a pass's publication and the health changes around it) share one write.
    if (this.#writing || this.#cancelTurn) return;
    this.#cancelTurn = nextTurn(this.#o.timers, () => {
      this.#cancelTurn = undefined;
      this.#writing = this.#write().finally(() => {
        this.#writing = undefined;
        if (this.#dirty) this.#schedule();
      });
    });
  }

  async #write(): Promise<void> {
    const term = this.#term;
    if (!term) return;
    this.#dirty = false;
    try {
      const written = term.written ?? (await this.#stored());
      const { changes, next } = this.#diff(written);
      if (changes.upsert.length > 0 || changes.remove.length > 0) {
        await this.#o.store.leases.fenced(term.fence.claim(), (trx) =>
          this.#o.store.routes.write(trx, changes, this.#o.channel),
        );
      }
      if (this.#term === term) term.written = next;
      this.#failing = false;
    } catch (error) {
      if (error instanceof LeaseLostError) return; // the term is over; the next leader publishes
      if (!this.#failing) this.#o.logger.warn({ err: error }, 'could not publish the routes; retrying');
      this.#failing = true;
      this.#dirty = true;
      this.#retry = this.#o.timers.setTimeout(() => this.#schedule(), this.#o.retryMs ?? 500);
    }
  }

  /** What the store holds at a term's first write: only ids matter (every row this term knows is rewritten). */
  async #stored(): Promise<Map<string, Written>> {
    const seqs = await this.#o.store.routes.seqs();
    return new Map([...seqs.keys()].map((id) => [id, { endpoint: '', workers: '', condition: null }]));
  }

  #diff(written: Map<string, Written>): {
    changes: { upsert: RouteChange[]; remove: string[] };
    next: Map<string, Written>;
  } {
    const { table } = this.#o;
    const next = new Map<string, Written>();
    const upsert: RouteChange[] = [];
    for (const endpoint of table.endpoints()) {
      const row = {
        endpoint: encodeEndpoint(endpoint),
        workers: encodeWorkers(table.routableWorkers(endpoint.id)),
        condition: encodeCondition(table.conditionOf(endpoint.id)),
      };
      next.set(endpoint.id, row);
      const before = written.get(endpoint.id);
      if (
        !before ||
        before.endpoint !== row.endpoint ||
        before.workers !== row.workers ||
        before.condition !== row.condition
      ) {
        upsert.push({ endpointId: endpoint.id, ...row });
      }
    }
    const remove = [...written.keys()].filter((id) => !next.has(id));
    return { changes: { upsert, remove }, next };
  }
}
