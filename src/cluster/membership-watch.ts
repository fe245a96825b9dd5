/**
 * `MembershipWatch`: which replicas are live, read from the heartbeat rows every `intervalMs`, fed to this
 * replica's `ShareSchedule` (slot-shares.ts). A replica counts as live while its last beat is at most `aliveMs`
 * old on the database's clock. From each read it also knows until when the others still count *it* in: the
 * database's clock read at `now` had this replica's beat at `lastSeen`, so the others drop it no earlier than
 * `aliveMs - (now - lastSeen)` after the read was sent, on this replica's monotonic clock; less `marginMs`, that is
 * when its shares end unless a later read renews them (a paused replica stops taking slots the others may be
 * given). A read that fails (the database is out) holds them for two more intervals: they last while it keeps trying.
 * The same read gives the split of what is divided between replicas by count and rank (shares.ts: the API's per-key
 * rate limit), which stands unchanged while reads fail.
 */
import type { Timers } from '../ports/clock.js';
import type { ReplicaRepository } from '../store/cluster/replicas.js';
import { ALONE, type Membership, membershipOf } from './shares.js';
import type { ShareSchedule } from './slot-shares.js';

export interface MembershipWatchOptions {
  replicaId: string;
  replicas: Pick<ReplicaRepository, 'list'>;
  schedule: ShareSchedule;
  /** How long a replica's beat keeps it live (three heartbeats). */
  aliveMs: number;
  /** Taken off the time this replica knows itself counted in. */
  marginMs: number;
  intervalMs: number;
  /** A monotonic clock (performance.now): it keeps counting while the process is paused. */
  monotonic: () => number;
  timers: Timers;
  logger: { info(fields: object, message: string): void; warn(fields: object, message: string): void };
  /** The shares may have changed. */
  onChange: () => void;
  /** After each successful read (the gateway signals of gone replicas are pruned then, say). */
  onRead?: () => void;
}

export class MembershipWatch {
  readonly #o: MembershipWatchOptions;
  #timer: unknown;
  #deadline: unknown;
  #others: readonly string[] = [];
  #gatewayUrls: ReadonlyMap<string, string> = new Map();
  #split: Membership = ALONE;
  #stopped = false;
  #failing = false;
  #ticking: Promise<void> | undefined;

  constructor(options: MembershipWatchOptions) {
    this.#o = options;
  }

  /** The other live replicas, as last read. */
  get others(): readonly string[] {
    return this.#others;
  }

  /** The other live replicas' gateway URLs, by id, as last read (where this gateway may forward requests). */
  get gatewayUrls(): ReadonlyMap<string, string> {
    return this.#gatewayUrls;
  }

  /** The live replicas' count and this one's rank (itself always counted), as last read; alone before any read. */
  get split(): Membership {
    return this.#split;
  }

  /** A first read, awaited; then one every interval. */
  async start(): Promise<void> {
    await this.#tick();
    this.#schedule();
  }

  /** Resolves once the read under way (if any) has ended and its outcome reached the schedule. */
  async settled(): Promise<void> {
    await this.#ticking;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#o.timers.clearTimeout(this.#timer);
    this.#o.timers.clearTimeout(this.#deadline);
    await this.#ticking;
  }

  #schedule(): void {
    if (this.#stopped) return;
    this.#timer = this.#o.timers.setTimeout(() => {
      this.#ticking = this.#tick().finally(() => {
        this.#ticking = undefined;
        this.#schedule();
      });
    }, this.#o.intervalMs);
  }

  async #tick(): Promise<void> {
    const { schedule, monotonic, aliveMs, marginMs, replicaId } = this.#o;
    const before = schedule.version;
    const sentAt = monotonic();
    try {
      const { replicas, now } = await this.#o.replicas.list();
      const live = replicas.filter((r) => now - r.lastSeenAt <= aliveMs);
      const members = live.map((r) => r.id).sort();
      const self = live.find((r) => r.id === replicaId);
      const validUntil = self ? sentAt + aliveMs - (now - self.lastSeenAt) - marginMs : sentAt;
      schedule.observe(
        { members, settled: new Map(live.map((r) => [r.id, r.settled ?? null])) },
        validUntil,
        monotonic(),
      );
      this.#others = members.filter((id) => id !== replicaId);
      const urls = new Map<string, string>();
      for (const r of live)
        if (r.id !== replicaId && r.gatewayUrl !== undefined) urls.set(r.id, r.gatewayUrl);
      this.#gatewayUrls = urls;
      this.#resplit(membershipOf(replicas, replicaId, now, aliveMs));
      this.#armDeadline(validUntil);
      this.#failing = false;
      this.#o.onRead?.();
    } catch (error) {
      if (!this.#failing)
        this.#o.logger.warn(
          { err: error },
          'could not read the replicas; slot shares and rate-limit splits kept while reads fail',
        );
      this.#failing = true;
      // The database is out, for every replica as a rule (a restart, a failover): none can re-split, so the last
      // shares stand while this replica keeps trying. Only one whose tries stop (paused) loses them at the deadline.
      // The price, cut off alone while the others still reach the database: see operations.md.
      const now = monotonic();
      schedule.expire(now);
      schedule.hold(now + 2 * this.#o.intervalMs);
      if (schedule.members !== undefined) this.#armDeadline(schedule.validUntil);
    }
    if (schedule.version !== before) this.#o.onChange();
  }

  #resplit(next: Membership): void {
    if (next.count === this.#split.count && next.rank === this.#split.rank) return;
    this.#o.logger.info(next, 'live replicas changed: limits split between replicas are split anew');
    this.#split = next;
  }

  /** At `validUntil`, with no fresher read, the shares end. */
  #armDeadline(validUntil: number): void {
    const { timers, monotonic, schedule } = this.#o;
    timers.clearTimeout(this.#deadline);
    this.#deadline = timers.setTimeout(
      () => {
        const before = schedule.version;
        schedule.expire(monotonic());
        if (schedule.version !== before) this.#o.onChange();
      },
      Math.max(0, validUntil - monotonic()),
    );
    (this.#deadline as { unref?: () => void } | undefined)?.unref?.();
  }
}
