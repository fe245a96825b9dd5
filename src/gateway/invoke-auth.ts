/**
 * The gateway's key check: which requests may call an endpoint's URL. A non-public endpoint needs
 * `Authorization: Bearer <key>` with an API key of its owner (or an admin key) or an invoke key made for it; every
 * Authorization header is taken off the request before anything else happens, so the worker never sees one. A
 * public endpoint's worker gets the request's Authorization headers but those that hold a Corral key anywhere
 * (corral-keys.ts), which are taken off whole. Verified keys are
 * cached by their SHA-256 for KEY_CACHE_TTL_MS, so that a request costs one hash and one map lookup, and a revoked
 * key is refused at most that long after its revocation (or, while the store does not answer, once it answers
 * again: an expired check stands until then, after a wait of at most STALE_CHECK_WAIT_MS for the store).
 */
import { hash as digest } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Endpoint } from '../domain/endpoint.js';
import { GatewayError } from '../errors/gateway-catalogue.js';
import { type Clock, systemTimers, type Timers } from '../ports/clock.js';
import type { EndpointKeyGrant } from '../service/invoke-key-service.js';
import { holdsCorralKey } from './corral-keys.js';

/** How long a key's check is believed: the bound on how long a revoked key keeps working on each replica. */
export const KEY_CACHE_TTL_MS = 10_000;
/**
 * How long a request whose key's check has expired waits for the store before that check's last answer stands: a
 * network cut leaves queries hanging instead of failing, and the gateway must go on serving meanwhile.
 */
export const STALE_CHECK_WAIT_MS = 1_000;
/** Keys remembered at most (good and bad); the oldest goes first, so a flood of wrong keys costs queries, not memory. */
export const MAX_CACHED_KEYS = 10_000;

const BEARER = /^Bearer\s+/i;

export interface InvokeAuthOptions {
  /** The store's answer: what the key allows, or undefined for a key that is unknown, wrong or revoked. */
  verify: (key: string) => Promise<EndpointKeyGrant | undefined>;
  clock: Clock;
  timers?: Timers;
  ttlMs?: number;
  maxEntries?: number;
}

/** A cached check: what the key allows (null: nothing) and until when that is believed. */
interface Checked {
  grant: EndpointKeyGrant | null;
  until: number;
}

/** Undefined: the request may go on. */
export type AccessVerdict = GatewayError | undefined;

export class InvokeAuth {
  readonly #o: Required<InvokeAuthOptions>;
  /** SHA-256 of a key -> its check; insertion order is age, for eviction. */
  readonly #checked = new Map<string, Checked>();
  /** Checks under way, so that a burst of requests with one new key asks the store once. */
  readonly #pending = new Map<string, Promise<EndpointKeyGrant | undefined>>();

  constructor(options: InvokeAuthOptions) {
    this.#o = { ttlMs: KEY_CACHE_TTL_MS, maxEntries: MAX_CACHED_KEYS, timers: systemTimers, ...options };
  }

  /**
   * Whether `req` may call `endpoint`: synchronous when the endpoint is public or the key's check is cached (the
   * common case), a promise when the store must be asked. The Authorization header is removed from `req` here, at
   * once, whatever the answer; a public endpoint keeps those that hold no Corral key.
   */
  check(req: IncomingMessage, endpoint: Endpoint): AccessVerdict | Promise<AccessVerdict> {
    if (endpoint.spec.public) {
      // Its own auth may need the header; a Corral key is never handed to a worker, whatever the header's count.
      removeCorralKeys(req);
      return undefined;
    }
    const raw = req.rawHeaders;
    const at = authorizationIndex(raw);
    if (at === NONE)
      return unauthenticated('send "Authorization: Bearer <key>" (an API key or an invoke key)');
    if (at === MANY) {
      removeEveryAuthorization(req);
      return unauthenticated('the request has more than one Authorization header');
    }
    const key = (raw[at + 1] as string).replace(BEARER, '').trim();
    removeAuthorization(req, at);
    if (key === '') return unauthenticated('the Authorization header holds no key');
    // The one-shot hash: a third of createHash's cost (0.5 against 1.4 us a key here), with no hasher object.
    const hash = digest('sha256', key, 'base64');
    const cached = this.#checked.get(hash);
    if (cached !== undefined && this.#o.clock() < cached.until) return decide(cached.grant, endpoint);
    const verified = this.#verify(hash, key).then(
      (grant) => decide(grant ?? null, endpoint),
      // The store is out (PostgreSQL lost): the key's last answer, however old, stands until it is back, so that a
      // replica keeps serving the callers it knows (docs/operations.md); a key never checked cannot be.
      () =>
        cached === undefined
          ? new GatewayError('ROUTING_UNAVAILABLE', 'the key could not be checked: the store did not answer')
          : decide(cached.grant, endpoint),
    );
    return cached === undefined
      ? verified
      : this.#atMostAWhile(verified, () => decide(cached.grant, endpoint));
  }

  /** `verified`, or `stale()` if the store has not answered within STALE_CHECK_WAIT_MS (it may hang, cut off). */
  #atMostAWhile(verified: Promise<AccessVerdict>, stale: () => AccessVerdict): Promise<AccessVerdict> {
    const { timers } = this.#o;
    let timer: unknown;
    const late = new Promise<AccessVerdict>((resolve) => {
      timer = timers.setTimeout(() => resolve(stale()), STALE_CHECK_WAIT_MS);
    });
    return Promise.race([verified, late]).finally(() => timers.clearTimeout(timer));
  }

  /** Asks the store about a key once for all the requests that carry it meanwhile, and remembers the answer. */
  #verify(hash: string, key: string): Promise<EndpointKeyGrant | undefined> {
    let pending = this.#pending.get(hash);
    if (pending === undefined) {
      pending = this.#o.verify(key).then(
        (grant) => {
          this.#pending.delete(hash);
          this.#remember(hash, grant ?? null);
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

  #remember(hash: string, grant: EndpointKeyGrant | null): void {
    this.#checked.delete(hash);
    if (this.#checked.size >= this.#o.maxEntries) {
      const oldest = this.#checked.keys().next();
      if (!oldest.done) this.#checked.delete(oldest.value);
    }
    this.#checked.set(hash, { grant, until: this.#o.clock() + this.#o.ttlMs });
  }
}

/** Whether the key's grant covers `endpoint`. */
function decide(grant: EndpointKeyGrant | null, endpoint: Endpoint): AccessVerdict {
  if (grant === null) return unauthenticated('the key is unknown or has been revoked');
  if (grant.admin) return undefined;
  if (grant.endpointId !== undefined) {
    return grant.endpointId === endpoint.id && grant.ownerId === endpoint.ownerId
      ? undefined
      : unauthenticated('this key was made for another endpoint (an invoke key, or a job delivery key)');
  }
  return grant.ownerId === endpoint.ownerId
    ? undefined
    : unauthenticated("the key is not one of the endpoint's owner");
}

function unauthenticated(message: string): GatewayError {
  return new GatewayError('UNAUTHENTICATED', message);
}

const NONE = -1;
const MANY = -2;

/** The index in raw headers of the one Authorization header's name; NONE or MANY otherwise. */
function authorizationIndex(raw: readonly string[]): number {
  let found = NONE;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    if (isAuthorization(raw[i] as string)) {
      if (found !== NONE) return MANY;
      found = i;
    }
  }
  return found;
}

/** Takes the Authorization header at `at` off the request: the proxy forwards from rawHeaders. */
function removeAuthorization(req: IncomingMessage, at: number): void {
  req.rawHeaders.splice(at, 2);
  forgetAuthorization(req);
}

function removeEveryAuthorization(req: IncomingMessage): void {
  const raw = req.rawHeaders;
  for (let i = raw.length - 2; i >= 0; i -= 2) {
    if (isAuthorization(raw[i] as string)) raw.splice(i, 2);
  }
  forgetAuthorization(req);
}

/**
 * Takes off every Authorization header whose value holds a Corral key; the others stay, in order. The parsed
 * header becomes the first that stays (node keeps the first of repeated Authorization headers).
 */
function removeCorralKeys(req: IncomingMessage): void {
  const raw = req.rawHeaders;
  let removed = false;
  let kept: string | undefined;
  for (let i = raw.length - 2; i >= 0; i -= 2) {
    if (!isAuthorization(raw[i] as string)) continue;
    const value = raw[i + 1] as string;
    if (holdsCorralKey(value)) {
      raw.splice(i, 2);
      removed = true;
    } else {
      kept = value;
    }
  }
  if (removed) req.headers.authorization = kept;
}

/**
 * Clears the parsed header too. Assigned rather than deleted: a `delete` makes V8 turn the headers object into a
 * slow dictionary, which cost 0.3 us here for every later read of a header.
 */
function forgetAuthorization(req: IncomingMessage): void {
  req.headers.authorization = undefined;
}

function isAuthorization(name: string): boolean {
  return name.length === 13 && name.toLowerCase() === 'authorization';
}
