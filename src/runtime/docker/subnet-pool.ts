/**
 * Which subnet a new worker network gets: the first block of the configured pool that overlaps no network the
 * engine already has and no route of the host that would take its traffic (shadowingRoutes). Docker's own default
 * pools hold about 30 networks, fewer than the owners (or endpoints) one engine serves; a pool of /24 blocks holds
 * hundreds. Pure: IPv4 CIDR arithmetic and the kernel's route table, tested by tables.
 */

export interface Ipv4Block {
  /** The first address, as an unsigned 32-bit number. */
  start: number;
  prefixLength: number;
}

const CIDR = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/;

/** Parses `a.b.c.d/n`; undefined for anything else (IPv6 included: the engine's IPv6 subnets never overlap these). */
export function parseIpv4Cidr(text: string): Ipv4Block | undefined {
  const match = CIDR.exec(text.trim());
  if (!match) return undefined;
  const octets = match.slice(1, 5).map(Number);
  const prefixLength = Number(match[5]);
  if (octets.some((octet) => octet > 255) || prefixLength > 32) return undefined;
  const address = octets.reduce((sum, octet) => sum * 256 + octet, 0);
  return { start: address - (address % blockSize(prefixLength)), prefixLength };
}

export function formatIpv4Block(block: Ipv4Block): string {
  const octets = [24, 16, 8, 0].map((shift) => Math.floor(block.start / 2 ** shift) % 256);
  return `${octets.join('.')}/${block.prefixLength}`;
}

function blockSize(prefixLength: number): number {
  return 2 ** (32 - prefixLength);
}

/** Whether two blocks share an address. */
export function overlaps(a: Ipv4Block, b: Ipv4Block): boolean {
  return a.start < b.start + blockSize(b.prefixLength) && b.start < a.start + blockSize(a.prefixLength);
}

/**
 * The first `/prefixLength` block of `pool` that overlaps none of `taken` (CIDR texts; unparsable ones are
 * ignored), or undefined when every block is taken or the pool is smaller than one block.
 */
export function firstFreeSubnet(
  pool: string,
  prefixLength: number,
  taken: readonly string[],
): string | undefined {
  const range = parseIpv4Cidr(pool);
  if (!range || prefixLength < range.prefixLength || prefixLength > 30) return undefined;
  const used = taken.map(parseIpv4Cidr).filter((block): block is Ipv4Block => block !== undefined);
  const size = blockSize(prefixLength);
  const end = range.start + blockSize(range.prefixLength);
  for (let start = range.start; start < end; start += size) {
    const candidate = { start, prefixLength };
    const clash = used.find((block) => overlaps(candidate, block));
    // Skip past the whole taken block at once: a /16 in the way costs one step, not 256.
    if (clash) start = Math.max(start, clash.start + blockSize(clash.prefixLength) - size);
    else return formatIpv4Block(candidate);
  }
  return undefined;
}

/** The first host address of an IPv4 subnet (Docker's default gateway), or undefined for anything else. */
export function firstHost(subnet: string): string | undefined {
  const block = parseIpv4Cidr(subnet);
  if (!block || block.prefixLength > 30) return undefined;
  return formatIpv4Block({ start: block.start + 1, prefixLength: 32 }).replace(/\/32$/, '');
}

/**
 * The destinations of the host's IPv4 routes, as CIDR texts, from the kernel's table (`/proc/net/route`), the
 * default route left out. A network Docker is given a subnet for is checked against its own networks only, never
 * against the host's routes (it does that only for subnets it picks itself): a bridge the engine left behind when it
 * removed a network (seen on Docker 20.10 in this project's test runs, cause unknown) keeps its route, the kernel
 * sends the new network's traffic there, and its workers cannot be reached. The table prints each address as the
 * host's 32-bit integer in hex: `littleEndian` is `os.endianness() === 'LE'`.
 */
export function routedSubnets(table: string, littleEndian: boolean): string[] {
  const toAddress = (hex: string): number | undefined => {
    if (!/^[0-9A-Fa-f]{8}$/.test(hex)) return undefined;
    const bytes = Buffer.from(hex, 'hex');
    return littleEndian ? bytes.readUInt32LE(0) : bytes.readUInt32BE(0);
  };
  return table
    .split('\n')
    .slice(1)
    .flatMap((line) => {
      const fields = line.trim().split(/\s+/);
      const destination = toAddress(fields[1] ?? '');
      const mask = toAddress(fields[7] ?? '');
      if (destination === undefined || mask === undefined || mask === 0) return [];
      const prefixLength = 32 - Math.log2(2 ** 32 - mask);
      if (!Number.isInteger(prefixLength)) return [];
      return [formatIpv4Block({ start: destination, prefixLength })];
    });
}

/**
 * Of the host's routed subnets, those that would take traffic from a new `/prefixLength` network's own route: the
 * kernel sends a packet by the longest matching route, and of two as long by the older. A broader route (a LAN or
 * VPN over the whole pool) loses to the network's route and is no clash here; one as long or longer is.
 */
export function shadowingRoutes(routes: readonly string[], prefixLength: number): string[] {
  return routes.filter((route) => (parseIpv4Cidr(route)?.prefixLength ?? -1) >= prefixLength);
}
