/**
 * Which registries Corral and its engine may be sent to: none on a loopback, link-local or private address (nor a
 * name that resolves to one, nor `localhost`), unless the operator lists the registry (`registries.allowPrivate`,
 * docs/security.md). A tenant's image reference names the host, so without this an image `127.0.0.1:{port}/x:1`
 * made the server and the engine connect wherever it said. The rule of what is private is net/.
 */
import { isIP } from 'node:net';
import { canonicalHost, hostKind } from '../net/address-kind.js';
import { type LookupAll, type ResolvedAddress, resolvePublic, systemLookupAll } from '../net/resolve.js';

export type RegistryConnection =
  /** May be connected to; at `address` when given (the one checked: a connection must not look the name up again). */
  | { kind: 'allowed'; address?: ResolvedAddress }
  /** On (or resolving to) an address the operator has not listed. Nothing was sent to it. */
  | { kind: 'refused'; reason: string }
  /** The name has no address now; nothing was sent to it either. */
  | { kind: 'unresolved'; reason: string };

export interface RegistryGuardOptions {
  /** Registries on private addresses the operator lists: `host` (any port) or `host:port`, as image names write them. */
  allowPrivate: readonly string[];
  lookupAll?: LookupAll;
}

/** A listed entry's problem, or undefined: it must be a host or host:port. For the config's check at start. */
export function allowEntryProblem(entry: string): string | undefined {
  return canonicalHost(entry) === undefined ? `"${entry}" is not a host or host:port` : undefined;
}

export class RegistryGuard {
  readonly #listed: { host: string; port: string | undefined }[];
  readonly #lookupAll: LookupAll;

  constructor(options: RegistryGuardOptions) {
    this.#listed = options.allowPrivate.flatMap((entry) => {
      const canonical = canonicalHost(entry);
      if (!canonical) return [];
      const port = /:\d+$/.test(entry) && !entry.endsWith(']') ? canonical.port : undefined;
      return [{ host: canonical.host, port }];
    });
    this.#lookupAll = options.lookupAll ?? systemLookupAll;
  }

  /** Whether `hostPort` (a registry as an image names it, or a token endpoint's host) may be connected to, and where. */
  async check(hostPort: string): Promise<RegistryConnection> {
    const canonical = canonicalHost(hostPort);
    if (!canonical) return { kind: 'refused', reason: `registry ${hostPort} is not a host name or address` };
    if (this.#isListed(canonical)) return { kind: 'allowed' };
    const literal = hostKind(canonical.host);
    if (literal !== undefined)
      return { kind: 'refused', reason: refusal(hostPort, `is a ${literal} address`) };
    const family = isIP(canonical.host);
    if (family !== 0)
      return { kind: 'allowed', address: { address: canonical.host, family: family === 6 ? 6 : 4 } };
    const resolved = await resolvePublic(canonical.host, this.#lookupAll);
    switch (resolved.kind) {
      case 'public':
        return { kind: 'allowed', address: resolved.address };
      case 'private':
        return {
          kind: 'refused',
          reason: refusal(hostPort, `resolves to a ${resolved.addressKind} address`),
        };
      default:
        return { kind: 'unresolved', reason: `registry host ${canonical.host} could not be resolved` };
    }
  }

  #isListed(canonical: { host: string; port: string }): boolean {
    return this.#listed.some(
      (e) => e.host === canonical.host && (e.port === undefined || e.port === canonical.port),
    );
  }
}

function refusal(hostPort: string, what: string): string {
  return (
    `registry ${hostPort} ${what}: this server does not pull from loopback, link-local or private addresses ` +
    'unless the operator lists the registry (registries.allowPrivate)'
  );
}
