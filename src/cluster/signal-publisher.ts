/**
 * `SignalPublisher`: this replica's gateway queues and worker load, written to `gateway_signals` for the leader's
 * autoscaler (cluster-signals.ts). It writes when they changed, at most every `minGapMs` and at least every
 * `everyMs` while anything is queued or in flight; when a request queues it writes on the next turn and then
 * notifies the leader, so that a wake from zero (or a scale-up) through any replica starts at once.
 */
import { nextTurn, type Timers } from '../ports/clock.js';
import type { GatewaySignalRepository, GatewaySignalWrite } from '../store/cluster/gateway-signals.js';

/** One endpoint's load on this gateway (gateway/endpoint-table.ts `GatewayEndpointLoad`). */
export interface LocalEndpointLoad {
  endpointId: string;
  queueLength: number;
  oldestEnqueuedAt: number | null;
  workers: readonly { id: string; inFlight: number; lastBusyAt: number }[];
  /** The workers strict requests wait for here (gateway/affinity.ts), routable or not. */
  awaited?: readonly { id: string; waiting: number; resume: boolean }[];
}

export interface SignalPublisherOptions {
  replicaId: string;
  loads: () => readonly LocalEndpointLoad[];
  /** Called with a listener for each request that has to wait (the gateway's onQueued). */
  onQueued: (listener: (endpointId: string) => void) => () => void;
  signals: Pick<GatewaySignalRepository, 'write' | 'removeReplica'>;
  /** Tells the leader that this replica's signals changed because a request queued. */
  notifyLeader: (endpointId: string) => Promise<void>;
  clock: () => number;
  timers: Timers;
  /** The regular write's period. */
  everyMs: number;
  /** The least time between two writes. */
  minGapMs: number;
  logger: { warn(fields: object, message: string): void };
}

/** The rows of the loads at `now`, ages in place of times (the database turns them into its own times). */
export function signalRows(loads: readonly LocalEndpointLoad[], now: number): GatewaySignalWrite[] {
  return loads.map((load) => {
    const workers: GatewaySignalWrite['workers'] = {};
    for (const w of load.workers) {
      workers[w.id] = { inFlight: w.inFlight, idleMs: w.inFlight > 0 ? 0 : Math.max(0, now - w.lastBusyAt) };
    }
    for (const w of load.awaited ?? []) {
      workers[w.id] = {
        ...(workers[w.id] ?? { inFlight: 0, idleMs: 0 }),
        waiting: w.waiting,
        resume: w.resume,
      };
    }
    return {
      endpointId: load.endpointId,
      queueLength: load.queueLength,
      oldestWaitMs: load.oldestEnqueuedAt === null ? null : Math.max(0, now - load.oldestEnqueuedAt),
      workers,
    };
  });
}

/** What changes a row's meaning: queue and in-flight counts (ages move by themselves). */
function fingerprint(rows: readonly GatewaySignalWrite[]): string {
  return rows
    .map((r) => {
      const busy = Object.entries(r.workers).map(
        ([id, w]) => `${id}:${w.inFlight}${w.waiting ? `:${w.waiting}${w.resume ? 'r' : ''}` : ''}`,
      );
      return `${r.endpointId}|${r.queueLength}|${busy.join(',')}`;
    })
    .join(';');
}

export class SignalPublisher {
  readonly #o: SignalPublisherOptions;
  #timer: unknown;
  #cancelTurn: (() => void) | undefined;
  #writing: Promise<void> | undefined;
  #lastAt = Number.NEGATIVE_INFINITY;
  #lastPrint = '';
  #written = new Set<string>();
  /** Endpoints whose queued requests the leader is to hear of after the next write. */
  readonly #queued = new Set<string>();
  #unsubscribe: (() => void) | undefined;
  #closed = false;
  #failing = false;

  constructor(options: SignalPublisherOptions) {
    this.#o = options;
  }

  start(): void {
    this.#unsubscribe = this.#o.onQueued((endpointId) => {
      this.#queued.add(endpointId);
      this.#soon();
    });
    this.#schedule(this.#o.everyMs);
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#unsubscribe?.();
    this.#cancelTurn?.();
    this.#o.timers.clearTimeout(this.#timer);
    await this.#writing;
    await this.#o.signals.removeReplica(this.#o.replicaId).catch(() => undefined);
  }

  /** Resolves once no write is under way. */
  async settled(): Promise<void> {
    while (this.#writing || this.#cancelTurn) {
      await (this.#writing ?? new Promise((resolve) => setImmediate(resolve)));
    }
  }

  #soon(): void {
    if (this.#closed || this.#cancelTurn || this.#writing) return;
    const wait = this.#lastAt + this.#o.minGapMs - this.#o.clock();
    if (wait > 0) {
      this.#schedule(wait);
      return;
    }
    this.#cancelTurn = nextTurn(this.#o.timers, () => {
      this.#cancelTurn = undefined;
      this.#run(true);
    });
  }

  #schedule(ms: number): void {
    if (this.#closed) return;
    this.#o.timers.clearTimeout(this.#timer);
    this.#timer = this.#o.timers.setTimeout(() => this.#run(false), ms);
    (this.#timer as { unref?: () => void } | undefined)?.unref?.();
  }

  #run(force: boolean): void {
    if (this.#writing) return;
    this.#writing = this.#write(force).finally(() => {
      this.#writing = undefined;
      if (this.#queued.size > 0) this.#soon();
      else this.#schedule(this.#o.everyMs);
    });
  }

  async #write(force: boolean): Promise<void> {
    const now = this.#o.clock();
    const loads = this.#o.loads();
    const rows = signalRows(loads, now);
    const print = fingerprint(rows);
    const busy = loads.some((l) => l.queueLength > 0 || l.workers.some((w) => w.inFlight > 0));
    const queued = [...this.#queued];
    this.#queued.clear();
    // Nothing changed and nothing waits or runs: the rows written still say it.
    if (!force && queued.length === 0 && print === this.#lastPrint && !busy) return;
    const ids = new Set(rows.map((r) => r.endpointId));
    const gone = [...this.#written].filter((id) => !ids.has(id));
    try {
      await this.#o.signals.write(this.#o.replicaId, rows, gone);
      this.#written = ids;
      this.#lastPrint = print;
      this.#lastAt = now;
      for (const endpointId of queued) await this.#o.notifyLeader(endpointId);
      this.#failing = false;
    } catch (error) {
      if (!this.#failing) this.#o.logger.warn({ err: error }, 'could not write the gateway signals');
      this.#failing = true;
    }
  }
}
