/**
 * `Elector`: the I/O around election.ts. It ticks every `renewEveryMs` (a follower tries to take the lease, a
 * leader renews it), steps down at its deadline by a timer of its own (a renewal that hangs cannot keep it leading)
 * and tells its listener when it is elected or deposed. Each term gets its own fence, which refuses once that term
 * is over, even if this replica leads again later under a new token.
 */
import type { Timers } from '../ports/clock.js';
import { type LeaseClaim, LeaseLostError, type LeaseRepository } from '../store/cluster/leases.js';
import {
  afterOutcome,
  atDeadline,
  type ElectionAction,
  type ElectionChange,
  type ElectionOutcome,
  type ElectionState,
  type ElectionTiming,
  FOLLOWER,
  leadsAt,
  nextAction,
} from './election.js';

/** What a leader's writes present: throws LeaseLostError once its term is over (a local check, no I/O). */
export interface TermFence {
  claim(): LeaseClaim;
}

export interface ElectorLogger {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

export interface ElectorOptions {
  leases: Pick<LeaseRepository, 'tryAcquire' | 'renew' | 'release'>;
  /** The lease's name (`controller`). */
  name: string;
  /** This replica's id. */
  holder: string;
  timing: ElectionTiming;
  /** A monotonic clock in milliseconds (performance.now): it keeps counting while the process is paused. */
  monotonic: () => number;
  timers: Timers;
  logger: ElectorLogger;
  /** A term began: act as leader under `fence` until `onDeposed`. */
  onElected(fence: TermFence): void;
  /** The term is over: stop acting (the fence already refuses). `stop` waits for it before releasing the lease. */
  onDeposed(): void | Promise<void>;
}

export class Elector {
  readonly #o: ElectorOptions;
  #state: ElectionState = FOLLOWER;
  #tick: unknown;
  #deadline: unknown;
  #ticking: Promise<void> | undefined;
  #deposing: Promise<void> = Promise.resolve();
  /** Whether the last acquisition or renewal failed (said once while it lasts). */
  #failing = false;
  #stopped = false;

  constructor(options: ElectorOptions) {
    this.#o = options;
  }

  /** Ticks now, then every `renewEveryMs`. */
  start(): void {
    this.#schedule(0);
  }

  /** Whether this replica leads now (its lease is valid on its own clock). */
  get leading(): boolean {
    return leadsAt(this.#state, this.#o.monotonic());
  }

  /** The term under way, or undefined: its token and when it began (monotonic). */
  get term(): { token: number; since: number } | undefined {
    return this.#state.role === 'leader' ? this.#state.term : undefined;
  }

  /** Stops ticking; a leader steps down and releases its lease so that another replica takes it at once. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#o.timers.clearTimeout(this.#tick);
    this.#o.timers.clearTimeout(this.#deadline);
    await this.#ticking;
    const state = this.#state;
    this.#apply({ state: FOLLOWER, change: state.role === 'leader' ? 'deposed' : undefined });
    await this.#deposing;
    if (state.role !== 'leader') return;
    await this.#o.leases.release(this.#claimOf(state.term.token)).then(
      () => this.#o.logger.info({ token: state.term.token }, 'released the controller lease'),
      (error: unknown) => this.#o.logger.warn({ err: error }, 'could not release the controller lease'),
    );
  }

  #schedule(ms: number): void {
    if (this.#stopped) return;
    this.#tick = this.#o.timers.setTimeout(() => {
      this.#ticking = this.#once().finally(() => {
        this.#ticking = undefined;
        this.#schedule(this.#o.timing.renewEveryMs);
      });
    }, ms);
  }

  async #once(): Promise<void> {
    const { monotonic, timing } = this.#o;
    const sentAt = monotonic();
    const action = nextAction(this.#state, sentAt);
    const outcome = action === 'step-down' ? ({ kind: 'failed' } as const) : await this.#ask(action);
    if (this.#stopped) return;
    this.#apply(afterOutcome(this.#state, action, outcome, sentAt, monotonic(), timing));
  }

  async #ask(action: ElectionAction): Promise<ElectionOutcome> {
    try {
      const outcome = await this.#write();
      if (this.#failing) this.#o.logger.info({}, 'the controller lease can be written again');
      this.#failing = false;
      return outcome;
    } catch (error) {
      if (!this.#failing) {
        this.#o.logger.warn(
          { err: error, action },
          'the controller lease cannot be written; said once while it fails',
        );
      }
      this.#failing = true;
      return { kind: 'failed' };
    }
  }

  /** A leader renews, a follower tries to take the lease. */
  async #write(): Promise<ElectionOutcome> {
    const { leases, name, holder, timing } = this.#o;
    if (this.#state.role === 'leader') {
      const renewed = await leases.renew(this.#claimOf(this.#state.term.token), timing.ttlMs);
      return renewed ? { kind: 'renewed' } : { kind: 'refused' };
    }
    const claim = await leases.tryAcquire(name, holder, timing.ttlMs);
    return claim ? { kind: 'acquired', token: claim.token } : { kind: 'refused' };
  }

  #apply(next: { state: ElectionState; change: ElectionChange }): void {
    this.#state = next.state;
    this.#o.timers.clearTimeout(this.#deadline);
    if (next.state.role === 'leader') {
      const wait = Math.max(0, next.state.term.validUntil - this.#o.monotonic());
      this.#deadline = this.#o.timers.setTimeout(
        () => this.#apply(atDeadline(this.#state, this.#o.monotonic())),
        wait,
      );
    }
    if (next.change === 'elected' && next.state.role === 'leader') {
      const { token } = next.state.term;
      this.#o.logger.info({ token }, 'elected: this replica runs the controller');
      this.#o.onElected({ claim: () => this.#claimIn(token) });
    } else if (next.change === 'deposed') {
      this.#o.logger.warn({}, 'no longer the leader: the controller stops here');
      const deposed = Promise.resolve(this.#o.onDeposed()).catch((error: unknown) =>
        this.#o.logger.warn({ err: error }, 'the controller did not stop cleanly'),
      );
      this.#deposing = this.#deposing.then(() => deposed);
    }
  }

  /** The claim of term `token` while it is under way and valid; LeaseLostError otherwise. */
  #claimIn(token: number): LeaseClaim {
    const state = this.#state;
    const claim = this.#claimOf(token);
    if (!leadsAt(state, this.#o.monotonic()) || state.term.token !== token) throw new LeaseLostError(claim);
    return claim;
  }

  #claimOf(token: number): LeaseClaim {
    return { name: this.#o.name, holder: this.#o.holder, token };
  }
}
