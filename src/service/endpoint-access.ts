/**
 * Who may call an endpoint: the one rule of the gateway's endpoint URLs (host form, path form, upgrades) and of the
 * jobs routes (`/v2/{endpoint}/...`, and the model router's `/openai/v1/...`, which picks among them). A key calls the endpoints of its owner (an API key), every endpoint (an admin
 * key), or its one endpoint of that endpoint's owner (an invoke key, a job delivery's key). `public: true` opens the
 * endpoint's URL alone: its jobs still need a key. A job delivery's key is the server's own, for its endpoint's URL:
 * never the jobs routes. Each caller words the refusal in its own catalogue's error; the keys' checks are cached
 * once for both (caller-keys.ts).
 */
import type { Endpoint } from '../domain/endpoint.js';
import type { EndpointReach } from '../store/endpoints/endpoints.js';
import type { KeyGrant } from './caller-keys.js';
import type { EndpointKeyGrant } from './invoke-key-service.js';

/** What is called: the endpoint's URL (the gateway), or its jobs (the jobs routes). */
export type EndpointUse = 'url' | 'jobs';

/** Whether a call of `use` needs a key at all: every one but a public endpoint's URL. */
export function needsKey(endpoint: Endpoint, use: EndpointUse): boolean {
  return use === 'jobs' || !endpoint.spec.public;
}

/** Why a key that grants nothing is refused. */
export const UNKNOWN_KEY = 'the key is unknown or has been revoked';

/** Why the key may call no endpoint for `use` (the reason, for a 401), or undefined when it may call some. */
export function keyRefusal(grant: EndpointKeyGrant, use: EndpointUse): string | undefined {
  if (use === 'jobs' && grant.delivery === true)
    return "a job delivery's key calls its endpoint's URL, never the jobs routes";
  return undefined;
}

/** Why a key that passed `keyRefusal` may not call `endpoint` (the reason), or undefined when it may. */
export function endpointRefusal(grant: EndpointKeyGrant, endpoint: Endpoint): string | undefined {
  if (grant.admin) return undefined;
  if (grant.endpointId !== undefined) {
    return grant.endpointId === endpoint.id && grant.ownerId === endpoint.ownerId
      ? undefined
      : 'this key was made for another endpoint (an invoke key, or a job delivery key)';
  }
  return grant.ownerId === endpoint.ownerId ? undefined : "the key is not one of the endpoint's owner";
}

/** Why the key may not call `endpoint` for `use` (the reason, for a 401), or undefined when it may. */
export function callRefusal(grant: KeyGrant, endpoint: Endpoint, use: EndpointUse): string | undefined {
  return grant === null ? UNKNOWN_KEY : (keyRefusal(grant, use) ?? endpointRefusal(grant, endpoint));
}

/**
 * Where the endpoints a key may call are looked for (the store's `matching`): its one endpoint of its owner, its
 * owner's, or every owner's (admin). `endpointRefusal` is still asked of each found.
 */
export function reachOf(grant: EndpointKeyGrant): EndpointReach {
  if (grant.admin) return {};
  return grant.endpointId === undefined
    ? { ownerId: grant.ownerId }
    : { ownerId: grant.ownerId, endpointId: grant.endpointId };
}

/**
 * Where the model router (`/openai/v1/...` without an endpoint) looks for the endpoint a model names: the key's
 * owner's endpoints, or its one endpoint (an invoke key). An admin key's too are its own owner's: the router never
 * picks across owners, whose model names may be the same. `endpointRefusal` is still asked of each found.
 */
export function modelReachOf(grant: EndpointKeyGrant): EndpointReach {
  return grant.endpointId === undefined
    ? { ownerId: grant.ownerId }
    : { ownerId: grant.ownerId, endpointId: grant.endpointId };
}
