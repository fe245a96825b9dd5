/**
 * Which webhook targets Corral posts to: an http or https URL whose host is not, and does not resolve to, a
 * loopback, link-local, private, unique-local, shared (CGNAT), unspecified, multicast or reserved address (an
 * IPv4-mapped IPv6 address counts as its IPv4 address), unless the operator allows private targets. The checks on a
 * URL and on an address are pure and answer the reason a target is refused; `resolveWebhookTarget` adds the DNS
 * look-up and gives the checked address that a delivery then connects to, so that a second look-up (DNS
 * rebinding) cannot lead it elsewhere.
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP } from 'node:net';

export interface TargetPolicy {
  /** The operator allows private targets (CORRAL_WEBHOOK_ALLOW_PRIVATE and the config key, docs/jobs.md). */
  allowPrivate: boolean;
}

/** One resolved address, as `dns.lookup` answers. */
export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Every address of a host name (injected in tests). */
export type LookupAll = (hostname: string) => Promise<ResolvedAddress[]>;

export const systemLookupAll: LookupAll = async (hostname) =>
  (await dnsLookup(hostname, { all: true, verbatim: true })).map((a) => ({
    address: a.address,
    family: a.family === 6 ? 6 : 4,
  }));

export type ResolvedTarget = { ok: true; url: URL; address: ResolvedAddress } | { ok: false; reason: string };

/** The longest a webhook URL may be. */
export const MAX_WEBHOOK_URL_LENGTH = 2048;

/** IPv4 ranges refused as targets, with the word a reason uses. */
const IPV4_RANGES: [string, number, string][] = [
  ['0.0.0.0', 8, 'unspecified'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'shared (CGNAT)'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'reserved'],
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'reserved'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved'],
];

function ipv4Number(address: string): number {
  return address.split('.').reduce((n, part) => n * 256 + Number(part), 0);
}

function ipv4Kind(address: string): string | undefined {
  const n = ipv4Number(address);
  for (const [base, bits, kind] of IPV4_RANGES) {
    const size = 2 ** (32 - bits);
    const start = ipv4Number(base);
    if (n >= start && n < start + size) return kind;
  }
  return undefined;
}

/** The eight 16-bit groups of an IPv6 address (an embedded dotted IPv4 tail included). */
function ipv6Groups(address: string): number[] {
  let text = address.toLowerCase().replace(/%.*$/, '');
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted?.[1]) {
    const n = ipv4Number(dotted[1]);
    text = `${text.slice(0, -dotted[1].length)}${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((g) => Number.parseInt(g, 16)));
  const front = parse(head);
  const back = tail === undefined ? [] : parse(tail);
  return [...front, ...new Array<number>(8 - front.length - back.length).fill(0), ...back];
}

function ipv6Kind(address: string): string | undefined {
  const g = ipv6Groups(address);
  const [g0 = 0, g1 = 0, g2 = 0, g3 = 0, g4 = 0, g5 = 0, g6 = 0, g7 = 0] = g;
  if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0) {
    if (g5 === 0xffff) return ipv4Kind(`${g6 >> 8}.${g6 & 255}.${g7 >> 8}.${g7 & 255}`);
    if (g5 === 0 && g6 === 0) return g7 === 0 ? 'unspecified' : g7 === 1 ? 'loopback' : 'reserved';
  }
  if ((g0 & 0xffc0) === 0xfe80) return 'link-local';
  if ((g0 & 0xffc0) === 0xfec0) return 'site-local';
  if ((g0 & 0xfe00) === 0xfc00) return 'unique-local';
  if ((g0 & 0xff00) === 0xff00) return 'multicast';
  return undefined;
}

/** Why an IP address is refused as a webhook target, or undefined when it may be posted to. */
export function addressProblem(address: string, policy: TargetPolicy): string | undefined {
  const family = isIP(address);
  if (family === 0) return `${address} is not an IP address`;
  const kind = family === 4 ? ipv4Kind(address) : ipv6Kind(address);
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
  if (!policy.allowPrivate && (host === 'localhost' || host.endsWith('.localhost'))) {
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
  let addresses: ResolvedAddress[];
  try {
    addresses = await lookupAll(host);
  } catch {
    return { ok: false, reason: `webhook host ${host} could not be resolved` };
  }
  const first = addresses[0];
  if (first === undefined) return { ok: false, reason: `webhook host ${host} has no address` };
  for (const { address } of addresses) {
    const refused = addressProblem(address, policy);
    if (refused !== undefined) return { ok: false, reason: `webhook host ${host} resolves to ${refused}` };
  }
  return { ok: true, url, address: first };
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
