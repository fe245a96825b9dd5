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
  const perClient = new Map<string, number>();
  const idle = new IdleConnections();
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
  server.maxConnections = options.maxConnections;
  server.on('drop', () => {
    refused.overListener += 1;
    note();
  });
  server.on('connection', (socket: Socket) => {
    const client = clientKey(socket.remoteAddress);
    const open = perClient.get(client) ?? 0;
    if (open >= options.maxConnectionsPerClient) {
      const oldest = idle.oldest(client);
      if (oldest === undefined) {
        refused.overClient += 1;
        socket.destroy();
        note();
        return;
      }
      idle.busy(client, oldest);
      oldest.destroy();
      idleClosed += 1;
      note();
    }
    perClient.set(client, open + 1);
    socket.once('close', () => {
      idle.busy(client, socket);
      const left = (perClient.get(client) ?? 1) - 1;
      if (left <= 0) perClient.delete(client);
      else perClient.set(client, left);
    });
  });
  // An HTTP server's connection is idle from the end of a response to its next request.
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const socket = request.socket;
    const client = clientKey(socket.remoteAddress);
    idle.busy(client, socket);
    response.once('finish', () => {
      if (!socket.destroyed) idle.waiting(client, socket);
    });
  });
  return { refused: () => ({ ...refused }), idleClosed: () => idleClosed, clients: () => perClient };
}

/** Each client's connections that wait between requests, in the order they began to wait. */
class IdleConnections {
  readonly #byClient = new Map<string, Set<Socket>>();

  waiting(client: string, socket: Socket): void {
    const sockets = this.#byClient.get(client) ?? new Set<Socket>();
    sockets.delete(socket);
    sockets.add(socket);
    this.#byClient.set(client, sockets);
  }

  busy(client: string, socket: Socket): void {
    const sockets = this.#byClient.get(client);
    if (!sockets?.delete(socket) || sockets.size > 0) return;
    this.#byClient.delete(client);
  }

  oldest(client: string): Socket | undefined {
    return this.#byClient.get(client)?.values().next().value;
  }
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
