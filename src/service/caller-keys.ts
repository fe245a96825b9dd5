/**
 * The one cache of the keys that endpoints' callers present, shared by the gateway's endpoint URLs and the jobs
 * routes (`/v2/{endpoint}/...`): what a key allows, asked of the store once per key per KEY_CACHE_TTL_MS and
 * remembered by the key's SHA-256 (never the key), so that a request costs one hash and one map lookup, and a
 * revoked key is refused at most that long after its revocation on every route of every replica (or, while the
 * store does not answer, once it answers again: an expired check stands until then, after a wait of at most
 * STALE_CHECK_WAIT_MS for the store). What a grant may call is endpoint-access.ts's rule.
 */
import { hash as digest } from 'node:crypto';
import { type Clock, systemTimers, type Timers } from '../ports/clock.js';
import type { EndpointKeyGrant } from './invoke-key-service.js';

/** How long a key's check is believed: the bound on how long a revoked key keeps working on each replica. */
export const KEY_CACHE_TTL_MS = 10_000;
/**
 * How long a call whose key's check has expired waits for the store before that check's last answer stands: a
 * network cut leaves queries hanging instead of failing, and the gateway must go on serving meanwhile.
 */
export const STALE_CHECK_WAIT_MS = 1_000;
/** Keys remembered at most (good and bad); the oldest goes first, so a flood of wrong keys costs queries, not memory. */
export const MAX_CACHED_KEYS = 10_000;

/** What a key allows; null: nothing (unknown, wrong or revoked). */
export type KeyGrant = EndpointKeyGrant | null;

export interface CallerKeysOptions {
  /** The store's answer: what the key allows, or undefined for a key that is unknown, wrong or revoked. */
  verify: (key: string) => Promise<EndpointKeyGrant | undefined>;
  clock: Clock;
  timers?: Timers;
  ttlMs?: number;
  maxEntries?: number;
}

/** A cached check: what the key allows and until when that is believed. */
interface Checked {
  grant: KeyGrant;
  until: number;
}

export class CallerKeys {
  readonly #o: Required<CallerKeysOptions>;
  /** SHA-256 of a key -> its check; insertion order is age, for eviction. */
  readonly #checked = new Map<string, Checked>();
  /** Checks under way, so that a burst of calls with one new key asks the store once. */
  readonly #pending = new Map<string, Promise<KeyGrant>>();

  constructor(options: CallerKeysOptions) {
    this.#o = { ttlMs: KEY_CACHE_TTL_MS, maxEntries: MAX_CACHED_KEYS, timers: systemTimers, ...options };
  }

  /**
   * What `key` allows: synchronous when its check is cached (the common case), a promise when the store must be
   * asked. The promise rejects only when the store failed for a key it never answered: a key checked before keeps
   * its last answer, however old, until the store is back (docs/operations.md).
   */
  grantOf(key: string): KeyGrant | Promise<KeyGrant> {
    // The one-shot hash: a third of createHash's cost (0.5 against 1.4 us a key here), with no hasher object.
    const hash = digest('sha256', key, 'base64');
    const cached = this.#checked.get(hash);
    if (cached !== undefined && this.#o.clock() < cached.until) return cached.grant;
    const verified = this.#verify(hash, key);
    if (cached === undefined) return verified;
    return this.#atMostAWhile(
      verified.catch(() => cached.grant),
      cached.grant,
    );
  }

  /** `verified`, or `stale` if the store has not answered within STALE_CHECK_WAIT_MS (it may hang, cut off). */
  #atMostAWhile(verified: Promise<KeyGrant>, stale: KeyGrant): Promise<KeyGrant> {
    const { timers } = this.#o;
    let timer: unknown;
    const late = new Promise<KeyGrant>((resolve) => {
      timer = timers.setTimeout(() => resolve(stale), STALE_CHECK_WAIT_MS);
    });
    return Promise.race([verified, late]).finally(() => timers.clearTimeout(timer));
  }

  /** Asks the store about a key once for all the calls that carry it meanwhile, and remembers the answer. */
  #verify(hash: string, key: string): Promise<KeyGrant> {
    let pending = this.#pending.get(hash);
    if (pending === undefined) {
      pending = this.#o.verify(key).then(
        (found) => {
          this.#pending.delete(hash);
          const grant = found ?? null;
          this.#remember(hash, grant);
          return grant;
        },
        (error: unknown) => {
          this.#pending.delete(hash);
          throw error;
        },
      );
      this.#pending.set(hash, pending);
    }
    return pending;
  }

  #remember(hash: string, grant: KeyGrant): void {
    this.#checked.delete(hash);
    if (this.#checked.size >= this.#o.maxEntries) {
      const oldest = this.#checked.keys().next();
      if (!oldest.done) this.#checked.delete(oldest.value);
    }
    this.#checked.set(hash, { grant, until: this.#o.clock() + this.#o.ttlMs });
  }
}
