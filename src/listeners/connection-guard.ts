/**
 * The connection caps of one listening server: at most `maxConnections` open at once (node closes an extra one as
 * it is accepted, before any parser or object exists for it), and at most `maxConnectionsPerClient` from one client
 * address (an IPv6 client by its /64, which one host usually holds whole). A client at its cap that opens another
 * connection while one of its own waits idle between requests (keep-alive, its last response sent) gets that idle
 * connection closed, the one idle longest, instead of the new one refused, as nginx reuses idle keep-alive
 * connections when it runs out: a client whose HTTP library opens new connections while its idle ones wait in its
 * pool (runpod-python's aiohttp does, about one per job, each kept 15 s) is not cut off from Corral, while a client
 * whose connections all hang mid-request is refused at once on accept. Refusals are logged at most once a minute,
 * with their counts since the last line.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
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
  /** Idle connections closed since the start to make room for their client's new one. */
  idleClosed(): number;
  /** Open connections per client key now (tests, diagnostics). */
  clients(): ReadonlyMap<string, number>;
}

export function guardConnections(server: Server, options: ConnectionGuardOptions): ConnectionGuard {
  /** Each client's open connections. */
  const byClient = new Map<string, Set<Socket>>();
  /** When each connection began to wait between requests (an order, not a time); absent while in a request. */
  const waitingSince = new WeakMap<Socket, number>();
  let waits = 0;
  const refused = { overListener: 0, overClient: 0 };
  let idleClosed = 0;
  const logged = { overListener: 0, overClient: 0, idleClosed: 0, at: Number.NEGATIVE_INFINITY };
  const note = () => {
    const now = options.clock();
    if (now - logged.at < REFUSAL_LOG_INTERVAL_MS) return;
    const overListener = refused.overListener - logged.overListener;
    const overClient = refused.overClient - logged.overClient;
    options.logger.warn(
      {
        listener: options.listener,
        overListener,
        overClient,
        ...(idleClosed > logged.idleClosed ? { idleClosed: idleClosed - logged.idleClosed } : {}),
        maxConnections: options.maxConnections,
        maxConnectionsPerClient: options.maxConnectionsPerClient,
      },
      overListener + overClient > 0
        ? 'connections refused at their caps'
        : "idle connections closed to make room under their clients' caps",
    );
    Object.assign(logged, refused, { idleClosed, at: now });
  };
  /** The client's connection that has waited longest between requests, if one waits. */
  const longestWaiting = (sockets: Set<Socket>): Socket | undefined => {
    let oldest: Socket | undefined;
    for (const socket of sockets) {
      const since = waitingSince.get(socket);
      if (since !== undefined && (oldest === undefined || since < (waitingSince.get(oldest) ?? since)))
        oldest = socket;
    }
    return oldest;
  };
  server.maxConnections = options.maxConnections;
  server.on('drop', () => {
    refused.overListener += 1;
    note();
  });
  server.on('connection', (socket: Socket) => {
    const client = clientKey(socket.remoteAddress);
    const sockets = byClient.get(client) ?? new Set<Socket>();
    if (sockets.size >= options.maxConnectionsPerClient) {
      const oldest = longestWaiting(sockets);
      if (oldest === undefined) {
        refused.overClient += 1;
        socket.destroy();
        note();
        return;
      }
      sockets.delete(oldest);
      oldest.destroy();
      idleClosed += 1;
      note();
    }
    sockets.add(socket);
    byClient.set(client, sockets);
    socket.once('close', () => {
      sockets.delete(socket);
      if (sockets.size === 0 && byClient.get(client) === sockets) byClient.delete(client);
    });
  });
  // An HTTP server's connection waits from the end of a response to its next request.
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const socket = request.socket;
    waitingSince.delete(socket);
    response.once('finish', () => waitingSince.set(socket, ++waits));
  });
  return {
    refused: () => ({ ...refused }),
    idleClosed: () => idleClosed,
    clients: () => new Map([...byClient].map(([client, sockets]) => [client, sockets.size])),
  };
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
