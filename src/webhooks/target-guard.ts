/**
 * Which webhook targets Corral posts to: an http or https URL whose host is not, and does not resolve to, a
 * loopback, link-local, private, unique-local, shared (CGNAT), unspecified, multicast or reserved address (an
 * IPv4-mapped IPv6 address counts as its IPv4 address), unless the operator allows private targets. The checks on a
 * URL and on an address are pure and answer the reason a target is refused; `resolveWebhookTarget` adds the DNS
 * look-up and gives the checked address that a delivery then connects to, so that a second look-up (DNS
 * rebinding) cannot lead it elsewhere.
 */
import { isIP } from 'node:net';
import { addressKind, isLoopbackName } from '../net/address-kind.js';
import { type LookupAll, type ResolvedAddress, resolvePublic, systemLookupAll } from '../net/resolve.js';

export { type LookupAll, type ResolvedAddress, systemLookupAll };

export interface TargetPolicy {
  /** The operator allows private targets (CORRAL_WEBHOOK_ALLOW_PRIVATE and the config key, docs/jobs.md). */
  allowPrivate: boolean;
}

export type ResolvedTarget = { ok: true; url: URL; address: ResolvedAddress } | { ok: false; reason: string };

/** The longest a webhook URL may be. */
export const MAX_WEBHOOK_URL_LENGTH = 2048;

/** Why an IP address is refused as a webhook target, or undefined when it may be posted to. */
export function addressProblem(address: string, policy: TargetPolicy): string | undefined {
  if (isIP(address) === 0) return `${address} is not an IP address`;
  const kind = addressKind(address);
  if (kind === undefined || policy.allowPrivate) return undefined;
  return `${address} is a ${kind} address; this server does not post webhooks to such addresses`;
}

/**
 * Why a webhook URL is refused before any DNS look-up, or undefined: not an absolute http(s) URL, user
 * information in it, a `localhost` name, or a literal address that `addressProblem` refuses.
 */
export function webhookUrlProblem(raw: string, policy: TargetPolicy): string | undefined {
  if (raw.length > MAX_WEBHOOK_URL_LENGTH)
    return `webhook URL is longer than ${MAX_WEBHOOK_URL_LENGTH} characters`;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'webhook is not an absolute URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return `webhook URL must be http or https, not ${url.protocol.slice(0, -1)}`;
  }
  if (url.username !== '' || url.password !== '') return 'webhook URL must not hold a user name or password';
  const host = hostOf(url);
  if (isIP(host) !== 0) return addressProblem(host, policy);
  if (!policy.allowPrivate && isLoopbackName(host)) {
    return `${host} is a loopback name; this server does not post webhooks to such addresses`;
  }
  return undefined;
}

/** The URL's host without IPv6 brackets or a trailing dot. */
function hostOf(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '').replace(/\.$/, '');
}

/**
 * Checks the URL, looks its host up and checks every address; on success the first address, which a delivery
 * connects to. A host with any refused address is refused (a name that resolves to both is not posted to).
 */
export async function resolveWebhookTarget(
  raw: string,
  policy: TargetPolicy,
  lookupAll: LookupAll = systemLookupAll,
): Promise<ResolvedTarget> {
  const problem = webhookUrlProblem(raw, policy);
  if (problem !== undefined) return { ok: false, reason: problem };
  const url = new URL(raw);
  const host = hostOf(url);
  const family = isIP(host);
  if (family !== 0) return { ok: true, url, address: { address: host, family: family === 6 ? 6 : 4 } };
  const resolved = await resolvePublic(host, lookupAll);
  switch (resolved.kind) {
    case 'unresolved':
      return { ok: false, reason: `webhook host ${host} could not be resolved` };
    case 'no-address':
      return { ok: false, reason: `webhook host ${host} has no address` };
    case 'private':
      if (!policy.allowPrivate) {
        const refused = addressProblem(resolved.address, policy);
        return { ok: false, reason: `webhook host ${host} resolves to ${refused}` };
      }
      return { ok: true, url, address: resolved.first };
    case 'public':
      return { ok: true, url, address: resolved.address };
  }
}

/** What `run` asks: the reason a webhook target is refused, or undefined (the core answers 400 naming it). */
export async function checkWebhookTarget(
  raw: string,
  policy: TargetPolicy,
  lookupAll: LookupAll = systemLookupAll,
): Promise<string | undefined> {
  const target = await resolveWebhookTarget(raw, policy, lookupAll);
  return target.ok ? undefined : target.reason;
}
