/**
 * Looking a host name up once and checking every address it has (`resolvePublic`), and a `lookup` for a connection
 * that answers the address checked (`pinnedLookup`), so that a second look-up (DNS rebinding) cannot lead the
 * connection elsewhere. The rule of what is public is address-kind.ts.
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import type { LookupFunction } from 'node:net';
import { addressKind } from './address-kind.js';

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

export type NameResolution =
  /** Every address is public: connect to `address`, the first. */
  | { kind: 'public'; address: ResolvedAddress }
  /** One of its addresses is not public (a name that resolves to both is refused); `first` as for a public one. */
  | { kind: 'private'; address: string; addressKind: string; first: ResolvedAddress }
  | { kind: 'unresolved' }
  | { kind: 'no-address' };

/** Looks a name up and checks each address it has. */
export async function resolvePublic(hostname: string, lookupAll: LookupAll): Promise<NameResolution> {
  let addresses: ResolvedAddress[];
  try {
    addresses = await lookupAll(hostname);
  } catch {
    return { kind: 'unresolved' };
  }
  const first = addresses[0];
  if (first === undefined) return { kind: 'no-address' };
  for (const { address } of addresses) {
    const kind = addressKind(address);
    if (kind !== undefined) return { kind: 'private', address, addressKind: kind, first };
  }
  return { kind: 'public', address: first };
}

/**
 * A `lookup` for `net.connect`/`tls.connect` that answers only the address given. Node 20 asks with `all: true` when
 * it may try several addresses (autoSelectFamily): it gets that one address too.
 */
export function pinnedLookup(address: ResolvedAddress): LookupFunction {
  return ((_host: string, opts: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (opts.all) callback(null, [{ address: address.address, family: address.family }]);
    else callback(null, address.address, address.family);
  }) as unknown as LookupFunction;
}
