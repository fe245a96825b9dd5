/**
 * `ClusterSignals`: the autoscaler's `QueueSignals` when several replicas serve (docs/operations.md). An endpoint's
 * queue and its workers' load are this replica's gateway's plus what every other live replica wrote to
 * `gateway_signals` (signal-publisher.ts), read every `pollMs` while this replica leads and at once when one of them
 * says a request queued there; then the scaler hears of it as of a request queued here (a wake from zero or a
 * scale-up starts at once). The database's times are turned into this replica's clock at each read.
 */

import type { Clock, Timers } from '../ports/clock.js';
import type { AffineWait, EndpointQueueSignal, QueueSignals } from '../ports/queue-signals.js';
import type { GatewaySignalRow } from '../store/cluster/gateway-signals.js';

interface RemoteSignal {
  /** Every request queued, strict ones too (the API's metrics). */
  queueLength: number;
  /** Of them, those waiting for one worker alone (strict affinity): not counted for scaling. */
  strictWaiting: number;
  oldestEnqueuedAt: number | null;
  workers: Map<string, { inFlight: number; lastBusyAt: number; awaited?: AffineWait }>;
}

export interface ClusterSignalsOptions {
  local: QueueSignals;
  /** Reads the rows of these replicas (only those of `endpointId` where given), with the database's clock. */
  read: (
    replicaIds: readonly string[],
    endpointId?: string,
  ) => Promise<{ rows: GatewaySignalRow[]; now: number }>;
  /** The other live replicas now. */
  others: () => readonly string[];
  clock: Clock;
  timers: Timers;
  pollMs: number;
  logger: { warn(fields: object, message: string): void };
}

/** Sums what each replica wrote, per endpoint, in the reader's clock (`now` there is `dbNow` in the database). */
export function sumSignals(
  rows: readonly GatewaySignalRow[],
  dbNow: number,
  now: number,
): Map<string, RemoteSignal> {
  const toLocal = (t: number) => now - Math.max(0, dbNow - t);
  const sums = new Map<string, RemoteSignal>();
  for (const row of rows) {
    let sum = sums.get(row.endpointId);
    if (!sum) {
      sum = { queueLength: 0, strictWaiting: 0, oldestEnqueuedAt: null, workers: new Map() };
      sums.set(row.endpointId, sum);
    }
    sum.queueLength += row.queueLength;
    if (row.oldestEnqueuedAt !== null) {
      const at = toLocal(row.oldestEnqueuedAt);
      sum.oldestEnqueuedAt = sum.oldestEnqueuedAt === null ? at : Math.min(sum.oldestEnqueuedAt, at);
    }
    for (const [id, load] of Object.entries(row.workers)) {
      const known = sum.workers.get(id);
      const lastBusyAt = load.inFlight > 0 ? now : toLocal(load.lastBusyAt);
      sum.strictWaiting += load.waiting ?? 0;
      const awaited: AffineWait | undefined =
        known?.awaited === 'resume' || load.resume ? 'resume' : load.waiting ? 'strict' : known?.awaited;
      sum.workers.set(id, {
        inFlight: (known?.inFlight ?? 0) + load.inFlight,
        lastBusyAt: Math.max(known?.lastBusyAt ?? Number.NEGATIVE_INFINITY, lastBusyAt),
        ...(awaited ? { awaited } : {}),
      });
    }
  }
  return sums;
}

export class ClusterSignals implements QueueSignals {
  readonly #o: ClusterSignalsOptions;
  #remote = new Map<string, RemoteSignal>();
  readonly #listeners = new Set<(endpointId: string) => void>();
  #timer: unknown;
  #running = false;
  #reading: Promise<void> | undefined;
  #failing = false;

  constructor(options: ClusterSignalsOptions) {
    this.#o = options;
  }

  queueSignal(endpointId: string, exists: (workerId: string) => boolean): EndpointQueueSignal | undefined {
    const local = this.#o.local.queueSignal(endpointId, exists);
    const remote = this.#remote.get(endpointId);
    if (!remote) return local;
    const oldest = [local?.oldestEnqueuedAt ?? null, remote.oldestEnqueuedAt].filter((t) => t !== null);
    return {
      queueLength: (local?.queueLength ?? 0) + remote.queueLength - remote.strictWaiting,
      oldestEnqueuedAt: oldest.length === 0 ? null : Math.min(...oldest),
      inFlight: (workerId) =>
        (local?.inFlight(workerId) ?? 0) + (remote.workers.get(workerId)?.inFlight ?? 0),
      lastBusyAt: (workerId) => {
        const here = local?.lastBusyAt(workerId);
        const there = remote.workers.get(workerId)?.lastBusyAt;
        if (here === undefined) return there;
        return there === undefined ? here : Math.max(here, there);
      },
      awaited: (workerId) => {
        const here = local?.awaited?.(workerId);
        const there = remote.workers.get(workerId)?.awaited;
        return here === 'resume' || there === 'resume' ? 'resume' : (here ?? there);
      },
    };
  }

  onQueued(listener: (endpointId: string) => void): () => void {
    const unsubscribe = this.#o.local.onQueued(listener);
    this.#listeners.add(listener);
    return () => {
      unsubscribe();
      this.#listeners.delete(listener);
    };
  }

  /** This replica leads: read the others' signals now (resolves after that first read) and every pollMs. */
  async start(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    await this.refresh();
  }

  /** It no longer leads: no more reads. */
  stop(): void {
    this.#running = false;
    this.#o.timers.clearTimeout(this.#timer);
    this.#remote = new Map();
  }

  /** Another replica says a request queued at the endpoint: read, then tell the scaler. */
  async remoteQueued(endpointId: string): Promise<void> {
    if (!this.#running) return;
    await this.refresh();
    for (const listener of this.#listeners) listener(endpointId);
  }

  /**
   * Resolves once no other replica reports a request in flight on the worker (read afresh every pollMs), or after
   * `timeoutMs`: the controller's drain before it removes a worker other gateways may still use.
   */
  async awaitDrained(endpointId: string, workerId: string, timeoutMs: number): Promise<void> {
    const deadline = this.#o.clock() + timeoutMs;
    const busy = () => (this.#remote.get(endpointId)?.workers.get(workerId)?.inFlight ?? 0) > 0;
    if (!this.#running || !busy()) return;
    while (this.#running && this.#o.clock() < deadline) {
      await new Promise<void>((resolve) => this.#o.timers.setTimeout(resolve, this.#o.pollMs));
      await this.refresh();
      if (!busy()) return;
    }
  }

  /**
   * The endpoint's requests queued and in flight on the other live replicas' gateways, as their rows say it now
   * (each writes them at most every 50 ms and at least every second while busy): the API's `endpoint/metrics`
   * adds them to this gateway's on any replica, leading or not. Read afresh at each call; a failed read throws.
   */
  async othersLoad(endpointId: string): Promise<{ queueLength: number; inFlight: number }> {
    const { rows, now } = await this.#o.read(this.#o.others(), endpointId);
    const sum = sumSignals(rows, now, this.#o.clock()).get(endpointId);
    let inFlight = 0;
    for (const load of sum?.workers.values() ?? []) inFlight += load.inFlight;
    return { queueLength: sum?.queueLength ?? 0, inFlight };
  }

  /** One read of the others' rows (reads asked during one share it). */
  refresh(): Promise<void> {
    this.#reading ??= this.#read().finally(() => {
      this.#reading = undefined;
    });
    return this.#reading;
  }

  async #read(): Promise<void> {
    this.#o.timers.clearTimeout(this.#timer);
    try {
      const others = this.#o.others();
      const { rows, now } = await this.#o.read(others);
      if (this.#running) this.#remote = sumSignals(rows, now, this.#o.clock());
      this.#failing = false;
    } catch (error) {
      if (!this.#failing) this.#o.logger.warn({ err: error }, "could not read the other replicas' queues");
      this.#failing = true;
    }
    if (this.#running) {
      this.#timer = this.#o.timers.setTimeout(() => void this.refresh(), this.#o.pollMs);
      (this.#timer as { unref?: () => void } | undefined)?.unref?.();
    }
  }
}
