/**
 * Which network addresses are not the public internet: loopback, link-local, private, unique-local, shared (CGNAT),
 * unspecified, multicast and reserved ranges (an IPv4-mapped IPv6 address counts as its IPv4 address), and the
 * `localhost` names. One rule for every place where a tenant names a host that Corral or its engine connects to
 * (jobs' webhooks, image registries). Pure.
 */
import { isIP } from 'node:net';

/** IPv4 ranges that are not public, with the word a reason uses. */
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

/**
 * What kind of non-public address an IP address is (`loopback`, `private`, `link-local`...), or undefined for a
 * public one. Throws for a string that is not an IP address: callers check hosts with `hostKind`.
 */
export function addressKind(address: string): string | undefined {
  const family = isIP(address);
  if (family === 0) throw new Error(`${address} is not an IP address`);
  return family === 4 ? ipv4Kind(address) : ipv6Kind(address);
}

/** `localhost` and its subdomains, which resolvers answer with loopback without asking DNS. */
export function isLoopbackName(host: string): boolean {
  return host === 'localhost' || host.endsWith('.localhost');
}

/**
 * A host as a connection reads it: an IPv4 address in any form a URL or a resolver takes (2130706433, 0x7f.1,
 * 0177.0.0.1) as dotted decimal, an IPv6 address compressed and without brackets, a name lowercased without its
 * trailing dot; undefined when it is not a host at all. `hostPort` may carry a port, which is dropped.
 */
export function canonicalHost(hostPort: string): { host: string; port: string } | undefined {
  // Anything beyond host[:port] (a path, user information, a query) means it was not one.
  if (hostPort === '' || /[/?#@\\\s]/.test(hostPort)) return undefined;
  try {
    const url = new URL(`http://${hostPort}`);
    return { host: url.hostname.replace(/^\[|\]$/g, '').replace(/\.$/, ''), port: url.port };
  } catch {
    return undefined;
  }
}

/**
 * What kind of non-public host this is, before any DNS look-up: a literal address's kind, `loopback` for the
 * `localhost` names, undefined for a public address or any other name (which must then be looked up).
 */
export function hostKind(host: string): string | undefined {
  if (isIP(host) !== 0) return addressKind(host);
  return isLoopbackName(host) ? 'loopback' : undefined;
}
