/**
 * The gateway's key check: which requests may call an endpoint's URL, by the callers' rule
 * (service/endpoint-access.ts) over the one cache of key checks (service/caller-keys.ts). A non-public endpoint needs
 * `Authorization: Bearer <key>` with an API key of its owner (or an admin key) or an invoke key made for it; every
 * Authorization header is taken off the request before anything else happens, so the worker never sees one. A
 * public endpoint's worker gets the request's Authorization headers but those that hold a Corral key anywhere
 * (corral-keys.ts), which are taken off whole.
 */
import type { IncomingMessage } from 'node:http';
import type { Endpoint } from '../domain/endpoint.js';
import { GatewayError } from '../errors/gateway-catalogue.js';
import type { CallerKeys, KeyGrant } from '../service/caller-keys.js';
import { callRefusal, needsKey } from '../service/endpoint-access.js';
import { holdsCorralKey } from './corral-keys.js';

const BEARER = /^Bearer\s+/i;

/** Undefined: the request may go on. */
export type AccessVerdict = GatewayError | undefined;

export class InvokeAuth {
  readonly #keys: CallerKeys;

  constructor(options: { keys: CallerKeys }) {
    this.#keys = options.keys;
  }

  /**
   * Whether `req` may call `endpoint`: synchronous when the endpoint is public or the key's check is cached (the
   * common case), a promise when the store must be asked. The Authorization header is removed from `req` here, at
   * once, whatever the answer; a public endpoint keeps those that hold no Corral key.
   */
  check(req: IncomingMessage, endpoint: Endpoint): AccessVerdict | Promise<AccessVerdict> {
    if (!needsKey(endpoint, 'url')) {
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
    const grant = this.#keys.grantOf(key);
    if (!(grant instanceof Promise)) return decide(grant, endpoint);
    return grant.then(
      (found) => decide(found, endpoint),
      () => new GatewayError('ROUTING_UNAVAILABLE', 'the key could not be checked: the store did not answer'),
    );
  }
}

/** Whether the key's grant covers `endpoint`'s URL. */
function decide(grant: KeyGrant, endpoint: Endpoint): AccessVerdict {
  const refused = callRefusal(grant, endpoint, 'url');
  return refused === undefined ? undefined : unauthenticated(refused);
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
