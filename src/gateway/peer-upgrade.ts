/**
 * Forwarding an upgrade (WebSocket) to another replica's gateway, as proxy.ts forwards a request: websocket.ts's
 * tunnel with the other gateway as its target, the request unchanged but for `X-Corral-Forwarded-By`, and its
 * answer (the 101 or a refusal) passed back with `X-Corral-Forwarded-To` (docs/operations.md, forwarding).
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { HANDSHAKE_TIMEOUT_MS, proxyUpgrade, type UpgradeOutcome, type UpgradeTarget } from './websocket.js';

export interface PeerUpgradeOptions {
  /** This replica's id, sent in X-Corral-Forwarded-By. */
  self: string;
  /** The replica that serves the endpoint instead, and its gateway's URL (its heartbeat row's). */
  target: { replicaId: string; url: string };
  /** How long the other gateway may queue the upgrade: its answer may take that plus a worker's handshake. */
  queueTimeoutMs: number;
}

/**
 * Tunnels the upgrade to the other replica's gateway until either side closes. `not-sent` (the client's socket
 * untouched) when that gateway cannot be reached, or when its URL is not one a tunnel can use (only http).
 */
export function upgradeToPeer(
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  options: PeerUpgradeOptions,
): Promise<UpgradeOutcome> {
  const { replicaId, url } = options.target;
  const address = peerAddress(url);
  if (address === undefined) return Promise.resolve('not-sent');
  return proxyUpgrade(
    req,
    socket,
    head,
    address,
    { 'x-corral-forwarded-to': replicaId },
    {
      workerId: replicaId,
      handshakeTimeoutMs: options.queueTimeoutMs + HANDSHAKE_TIMEOUT_MS,
      toGateway: { forwardedBy: options.self },
    },
  );
}

/** Host and port of a gateway URL (`http://host:port`); undefined for one that is not plain http. */
export function peerAddress(url: string): UpgradeTarget | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined;
  }
  if (parsed.protocol !== 'http:' || parsed.hostname === '') return undefined;
  const host = parsed.hostname.startsWith('[') ? parsed.hostname.slice(1, -1) : parsed.hostname;
  return { host, port: parsed.port === '' ? 80 : Number(parsed.port) };
}
