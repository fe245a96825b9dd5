/**
 * The gateway's key check: which requests may call an endpoint's URL, by the callers' rule
 * (service/endpoint-access.ts) over the one cache of key checks (service/caller-keys.ts). A non-public endpoint needs
 * `Authorization: Bearer <key>` with an API key of its owner (or an admin key) or an invoke key made for it. The
 * request is read, never changed: what reaches a worker is `authorizationFor`'s, applied as the worker's headers are
 * built (headers.ts): no Authorization header for a non-public endpoint; for a public one, all but those that hold
 * a Corral key anywhere (corral-keys.ts), which are left out whole.
 */
import type { IncomingMessage } from 'node:http';
import type { Endpoint } from '../domain/endpoint.js';
import { GatewayError } from '../errors/gateway-catalogue.js';
import type { CallerKeys, KeyGrant } from '../service/caller-keys.js';
import { callRefusal, needsKey } from '../service/endpoint-access.js';
import type { AuthorizationPolicy } from './headers.js';

const BEARER = /^Bearer\s+/i;

/** Undefined: the request may go on. */
export type AccessVerdict = GatewayError | undefined;

/** Which of a request's Authorization headers its endpoint's worker gets. */
export function authorizationFor(endpoint: Endpoint): AuthorizationPolicy {
  // A public endpoint's app may need its own; a Corral key is never handed to a worker, whatever the header's count.
  return needsKey(endpoint, 'url') ? 'drop' : 'drop-corral-keys';
}

export class InvokeAuth {
  readonly #keys: CallerKeys;

  constructor(options: { keys: CallerKeys }) {
    this.#keys = options.keys;
  }

  /**
   * Whether `req` may call `endpoint`: synchronous when the endpoint is public or the key's check is cached (the
   * common case), a promise when the store must be asked.
   */
  check(req: IncomingMessage, endpoint: Endpoint): AccessVerdict | Promise<AccessVerdict> {
    if (!needsKey(endpoint, 'url')) return undefined;
    const raw = req.rawHeaders;
    const at = authorizationIndex(raw);
    if (at === NONE)
      return unauthenticated('send "Authorization: Bearer <key>" (an API key or an invoke key)');
    if (at === MANY) return unauthenticated('the request has more than one Authorization header');
    const key = (raw[at + 1] as string).replace(BEARER, '').trim();
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

function isAuthorization(name: string): boolean {
  return name.length === 13 && name.toLowerCase() === 'authorization';
}
