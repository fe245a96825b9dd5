/**
 * `ReplicaMembership`: how many replicas are live and this one's rank among them (shares.ts), read from the
 * heartbeat rows every `intervalMs`, for what is split between replicas (the API's per-key rate limit). While the
 * database cannot be read, the last answer stands: a replica cut off from PostgreSQL goes on enforcing the share it
 * had, which stays within the limit as long as no replica joins meanwhile.
 */
import type { Timers } from '../service/clock.js';
import type { ReplicaRepository } from '../store/replicas.js';
import { ALONE, type Membership, membershipOf } from './shares.js';

export interface ReplicaMembershipOptions {
  replicas: Pick<ReplicaRepository, 'list'>;
  /** This replica's id. */
  self: string;
  intervalMs: number;
  /** A replica not seen for longer is not live (the same bound as GET cluster's `alive`). */
  staleAfterMs: number;
  timers: Timers;
  logger: { info(fields: object, message: string): void; warn(fields: object, message: string): void };
}

export class ReplicaMembership {
  readonly #o: ReplicaMembershipOptions;
  #current: Membership = ALONE;
  #timer: unknown;
  #reading: Promise<void> | undefined;
  #stopped = false;
  #failing = false;

  constructor(options: ReplicaMembershipOptions) {
    this.#o = options;
  }

  /** The live replicas and this one's rank, as last read (alone until the first read). */
  current(): Membership {
    return this.#current;
  }

  /** The first read, awaited (its failure leaves it alone and is said); then one every interval. */
  async start(): Promise<void> {
    await this.#read();
    this.#schedule();
  }

  /** Resolves once the read under way (if any) has ended. */
  async settled(): Promise<void> {
    await this.#reading;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#o.timers.clearTimeout(this.#timer);
    await this.#reading;
  }

  #schedule(): void {
    if (this.#stopped) return;
    this.#timer = this.#o.timers.setTimeout(() => {
      this.#reading = this.#read().finally(() => {
        this.#reading = undefined;
        this.#schedule();
      });
    }, this.#o.intervalMs);
  }

  async #read(): Promise<void> {
    try {
      const { replicas, now } = await this.#o.replicas.list();
      const next = membershipOf(replicas, this.#o.self, now, this.#o.staleAfterMs);
      this.#failing = false;
      if (next.count !== this.#current.count || next.rank !== this.#current.rank) {
        this.#o.logger.info(next, 'live replicas changed: limits split between replicas are split anew');
      }
      this.#current = next;
    } catch (error) {
      if (!this.#failing) {
        this.#o.logger.warn(
          { err: error },
          'cannot read the live replicas; the last split stands while it fails',
        );
      }
      this.#failing = true;
    }
  }
}
