/**
 * `Heartbeat`: this replica's row in the `replicas` table, written every `intervalMs` with its gateway's load, so
 * that `GET /v1/cluster` lists the replicas and says which are alive. It also deletes the rows of replicas gone
 * for `pruneAfterMs` (killed ones; one that stops cleanly deletes its own).
 */

import type { ReplicaBeat } from '../domain/records.js';
import type { Timers } from '../ports/clock.js';
import type { ReplicaRepository } from '../store/cluster/replicas.js';

export interface HeartbeatOptions {
  replicas: Pick<ReplicaRepository, 'beat' | 'remove' | 'prune'>;
  /** What the row says, read at each beat (the load changes). */
  beat: () => ReplicaBeat;
  intervalMs: number;
  pruneAfterMs: number;
  timers: Timers;
  logger: { warn(fields: object, message: string): void };
  /** After each beat: whether the database took it (`/healthz` says so without a query of its own). */
  onBeat?: (accepted: boolean) => void;
}

/** A beat every 2 s; rows of replicas not seen for 10 min go. */
export const HEARTBEAT_INTERVAL_MS = 2_000;
export const HEARTBEAT_PRUNE_AFTER_MS = 600_000;

/** A gateway's requests in flight and queued over every endpoint (its `stats()`), for the heartbeat row. */
export function gatewayLoad(stats: readonly { inFlight: number; queueLength: number }[]): {
  inFlight: number;
  queued: number;
} {
  let inFlight = 0;
  let queued = 0;
  for (const endpoint of stats) {
    inFlight += endpoint.inFlight;
    queued += endpoint.queueLength;
  }
  return { inFlight, queued };
}

export class Heartbeat {
  readonly #o: HeartbeatOptions;
  #timer: unknown;
  #beating: Promise<void> | undefined;
  #stopped = false;
  #failing = false;

  constructor(options: HeartbeatOptions) {
    this.#o = options;
  }

  /** The first beat, awaited (a database that refuses it fails the start); then one every interval. */
  async start(): Promise<void> {
    await this.#o.replicas.beat(this.#o.beat());
    this.#schedule();
  }

  /** Resolves once the beat under way (if any) has ended. */
  async settled(): Promise<void> {
    await this.#beating;
  }

  /** No more beats; the row goes. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#o.timers.clearTimeout(this.#timer);
    await this.#beating;
    await this.#o.replicas.remove(this.#o.beat().id).catch(() => undefined);
  }

  #schedule(): void {
    if (this.#stopped) return;
    this.#timer = this.#o.timers.setTimeout(() => {
      this.#beating = this.#once().finally(() => {
        this.#beating = undefined;
        this.#schedule();
      });
    }, this.#o.intervalMs);
  }

  async #once(): Promise<void> {
    try {
      await this.#o.replicas.beat(this.#o.beat());
      await this.#o.replicas.prune(this.#o.pruneAfterMs);
      this.#failing = false;
      this.#o.onBeat?.(true);
    } catch (error) {
      this.#o.onBeat?.(false);
      // Said once while it lasts: the database is down or refuses.
      if (!this.#failing) this.#o.logger.warn({ err: error }, 'heartbeat failed; said once while it fails');
      this.#failing = true;
    }
  }
}
