/**
 * Each worker's `maxConcurrent` slots split between the live replicas (pure, on an injected monotonic clock), so
 * that the requests in flight on one worker, summed over every replica's gateway, never exceed it
 * (docs/operations.md, "One worker's slots across replicas").
 *
 * - `shareOf`: with N live replicas ordered by id, each gets floor(c/N) of a worker's c slots, and c mod N of them
 *   one more; which ones get the extra slot turns with the worker (a hash of its id), so that with c < N every
 *   replica still gets slots on some workers.
 * - `ShareSchedule`: when the membership changes, a share that shrinks applies at once; one that grows applies only
 *   once `settleMs` passed and every other member reported itself settled for the new membership (its requests in
 *   flight on every worker within its new share). Until then the replica keeps the least of its shares under every
 *   membership seen since it last settled. A replica starts from nothing (share 0), and its shares end (0) when its
 *   membership view is too old to be sure the others still count it in: at `validUntil`.
 */

export interface Membership {
  /** The live replicas' ids, sorted. */
  members: readonly string[];
  /** Per member, the membership key it last reported being settled for (null: none). */
  settled: ReadonlyMap<string, string | null>;
}

export interface ShareTiming {
  /** How long after a change a share may grow at the earliest. */
  settleMs: number;
}

/** One membership's identity: its sorted member ids. */
export function membershipKey(members: readonly string[]): string {
  return members.join(',');
}

/** A small stable hash of a worker id (FNV-1a), to turn which replicas get a worker's extra slots. */
function turnOf(workerId: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < workerId.length; i++) {
    hash ^= workerId.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/** `self`'s share of the worker's `capacity` slots among `members` (sorted); 0 when it is not a member. */
export function shareOf(
  capacity: number,
  members: readonly string[],
  self: string,
  workerId: string,
): number {
  const n = members.length;
  const index = members.indexOf(self);
  if (index < 0 || n === 0) return 0;
  const base = Math.floor(capacity / n);
  const extra = capacity % n;
  if (extra === 0) return base;
  const start = turnOf(workerId) % n;
  return base + ((index - start + n) % n < extra ? 1 : 0);
}

const NOBODY: readonly string[] = Object.freeze([]);

export class ShareSchedule {
  readonly #self: string;
  readonly #timing: ShareTiming;
  /** Memberships seen since the last settled one (the first of them included); shares are their least. */
  #pending: (readonly string[])[] = [NOBODY];
  #current: readonly string[] | undefined;
  #changedAt = 0;
  #validUntil = Number.NEGATIVE_INFINITY;
  #version = 0;

  constructor(options: { self: string; timing: ShareTiming }) {
    this.#self = options.self;
    this.#timing = options.timing;
  }

  /** Changes whenever a share may have changed: readers re-read then. */
  get version(): number {
    return this.#version;
  }

  /** The membership now in force (undefined before the first observation or after expiry). */
  get members(): readonly string[] | undefined {
    return this.#current;
  }

  /**
   * A fresh view of the membership at `now`, valid until `validUntil` (when others may stop counting this
   * replica in). Shares that grow wait for `settleMs` and for every other member to have settled for it.
   */
  observe(view: Membership, validUntil: number, now: number): void {
    this.expire(now);
    this.#validUntil = validUntil;
    const key = membershipKey(view.members);
    if (this.#current === undefined || membershipKey(this.#current) !== key) {
      this.#current = view.members;
      this.#changedAt = now;
      this.#pending.push(view.members);
      this.#version += 1;
    }
    if (this.#pending.length > 1 && this.#mayGrow(view, key, now)) {
      this.#pending = [view.members];
      this.#version += 1;
    }
  }

  /** Past `validUntil`: every share is 0 and the next view starts from nothing again. */
  expire(now: number): void {
    if (now < this.#validUntil || this.#current === undefined) return;
    this.#current = undefined;
    this.#pending = [NOBODY];
    this.#version += 1;
  }

  /**
   * Keeps the shares in force until at least `validUntil` without a fresh view, while the database cannot be read
   * (operations.md: the gateway goes on serving through an outage). Nothing to keep once they expired.
   */
  hold(validUntil: number): void {
    if (this.#current === undefined) return;
    this.#validUntil = Math.max(this.#validUntil, validUntil);
  }

  /** Until when the shares hold without a fresh view. */
  get validUntil(): number {
    return this.#validUntil;
  }

  /** This replica's share of a worker's `capacity` slots now. */
  share(workerId: string, capacity: number, now: number): number {
    if (now >= this.#validUntil) return 0;
    let least = capacity;
    for (const members of this.#pending) {
      least = Math.min(least, shareOf(capacity, members, this.#self, workerId));
    }
    return least;
  }

  /**
   * The membership this replica is settled for, given its requests in flight per worker: its key when no worker
   * holds more of this replica's requests than its share under it, else null (it waits for them to end).
   */
  settledFor(load: readonly { workerId: string; capacity: number; inFlight: number }[]): string | null {
    const members = this.#current;
    if (!members) return null;
    for (const w of load) {
      if (w.inFlight > shareOf(w.capacity, members, this.#self, w.workerId)) return null;
    }
    return membershipKey(members);
  }

  #mayGrow(view: Membership, key: string, now: number): boolean {
    if (now < this.#changedAt + this.#timing.settleMs) return false;
    return view.members.every((id) => id === this.#self || view.settled.get(id) === key);
  }
}
