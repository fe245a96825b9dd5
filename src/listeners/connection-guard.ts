/**
 * The connection caps of one listening server: at most `maxConnections` open at once (node closes an extra one as
 * it is accepted, before any parser or object exists for it), and at most `maxConnectionsPerClient` from one client
 * address (an IPv6 client by its /64, which one host usually holds whole), closed at once on accept. Refusals are
 * logged at most once a minute, with their counts since the last line.
 */
import type { Server, Socket } from 'node:net';

export interface ConnectionGuardOptions {
  /** Which listener, in logs: `api` or `gateway`. */
  listener: string;
  maxConnections: number;
  maxConnectionsPerClient: number;
  logger: { warn(fields: object, message: string): void };
  clock: () => number;
}

/** How long refusals are counted before they are logged again. */
export const REFUSAL_LOG_INTERVAL_MS = 60_000;

export interface ConnectionGuard {
  /** Connections refused since the start: over the listener's cap, and over a client's. */
  refused(): { overListener: number; overClient: number };
  /** Open connections per client key now (tests, diagnostics). */
  clients(): ReadonlyMap<string, number>;
}

export function guardConnections(server: Server, options: ConnectionGuardOptions): ConnectionGuard {
  const perClient = new Map<string, number>();
  const refused = { overListener: 0, overClient: 0 };
  const logged = { overListener: 0, overClient: 0, at: Number.NEGATIVE_INFINITY };
  const note = () => {
    const now = options.clock();
    if (now - logged.at < REFUSAL_LOG_INTERVAL_MS) return;
    options.logger.warn(
      {
        listener: options.listener,
        overListener: refused.overListener - logged.overListener,
        overClient: refused.overClient - logged.overClient,
        maxConnections: options.maxConnections,
        maxConnectionsPerClient: options.maxConnectionsPerClient,
      },
      'connections refused at their caps',
    );
    Object.assign(logged, refused, { at: now });
  };
  server.maxConnections = options.maxConnections;
  server.on('drop', () => {
    refused.overListener += 1;
    note();
  });
  server.on('connection', (socket: Socket) => {
    const client = clientKey(socket.remoteAddress);
    const open = perClient.get(client) ?? 0;
    if (open >= options.maxConnectionsPerClient) {
      refused.overClient += 1;
      socket.destroy();
      note();
      return;
    }
    perClient.set(client, open + 1);
    socket.once('close', () => {
      const left = (perClient.get(client) ?? 1) - 1;
      if (left <= 0) perClient.delete(client);
      else perClient.set(client, left);
    });
  });
  return { refused: () => ({ ...refused }), clients: () => perClient };
}

/** The key a client's connections are counted under: its IPv4 address, or the /64 of its IPv6 address. */
export function clientKey(address: string | undefined): string {
  if (address === undefined) return '';
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1] as string;
  if (!address.includes(':')) return address;
  return `${expandIpv6(address).slice(0, 4).join(':')}::/64`;
}

/** The eight groups of an IPv6 address, `::` filled in, zone dropped (an embedded IPv4 tail counts as groups 7-8). */
function expandIpv6(address: string): string[] {
  const bare = address.split('%')[0] as string;
  const [head = '', tail] = bare.split('::');
  const groups = (text: string) => (text === '' ? [] : text.split(':'));
  const left = groups(head);
  const right = tail === undefined ? [] : groups(tail);
  const fill = Array.from({ length: Math.max(0, 8 - left.length - right.length) }, () => '0');
  return [...left, ...fill, ...right].map((g) => g.toLowerCase().replace(/^0+(?=.)/, ''));
}
