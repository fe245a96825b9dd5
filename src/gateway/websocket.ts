/**
 * Proxies an HTTP Upgrade (WebSocket) as a raw TCP pass-through: connect to the worker with node:net, write the
 * request line and headers (X-Forwarded-* set, hop-by-hop headers other than `Connection: Upgrade` and `Upgrade`
 * dropped), forward the bytes the client already sent (`head`), then copy bytes both ways with backpressure
 * (`pipe`) until either side closes, when the other is closed after its pending writes flush.
 *
 * The worker's response head is read up to its blank line so that the gateway's response headers can be added to
 * it (whatever its status: a worker that refuses the upgrade answers through the same path); everything after it
 * passes untouched.
 */
import type { IncomingMessage } from 'node:http';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import { GatewayError } from '../errors/gateway-catalogue.js';
import { answerUpgrade } from './answer.js';
import { forwardRequestHeaders } from './headers.js';

export type UpgradeOutcome =
  /** The worker answered and the connection ran until one side closed it. */
  | 'ok'
  /** The worker could not be reached (refused, connect timeout): nothing was written to `socket`, nothing read
   * from it; the caller may try another worker or answer itself. */
  | 'not-sent'
  /** The worker failed after the request reached it: a 502 was written if it had not answered yet. */
  | 'worker-error'
  /** The worker did not answer the handshake within `handshakeTimeoutMs`: a 504 was written. */
  | 'timeout'
  /** The client closed before the worker answered. */
  | 'client-gone';

export interface UpgradeTarget {
  host: string;
  port: number;
}

export interface ProxyUpgradeOptions {
  /** Default 5000. */
  connectTimeoutMs?: number;
  /** From connected to the worker's whole response head. Default 30 000. */
  handshakeTimeoutMs?: number;
  /** Worker id for error metadata. */
  workerId?: string;
  /** Called once with the worker's status code when its response head is passed on (101, or a refusal). */
  onResponse?: (statusCode: number) => void;
}

/** A worker's response head larger than this is refused. */
const MAX_HEAD_BYTES = 64 * 1024;
const HEAD_END = Buffer.from('\r\n\r\n', 'latin1');
const STATUS_LINE = /^HTTP\/\d(?:\.\d)? (\d{3})/;
/** How long a side may take to flush its last writes once the other side has closed. */
const CLOSE_GRACE_MS = 10_000;

/**
 * Tunnels the upgrade request `req` (from node:http's `upgrade` event, with its `socket` and `head`) to `target`.
 * `responseHeaders` (X-Corral-Worker...) are added to the worker's response head, replacing any of the same name.
 * Resolves when the tunnel is over (or, for `not-sent`, as soon as the worker cannot be reached); never rejects.
 */
export function proxyUpgrade(
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  target: UpgradeTarget,
  responseHeaders?: Record<string, string>,
  options: ProxyUpgradeOptions = {},
): Promise<UpgradeOutcome> {
  if (socket.destroyed) return Promise.resolve('client-gone');
  return new Promise((resolve) => {
    const connectTimeoutMs = options.connectTimeoutMs ?? 5_000;
    const handshakeTimeoutMs = options.handshakeTimeoutMs ?? 30_000;
    let phase: 'connecting' | 'handshake' | 'open' | 'done' = 'connecting';
    let outcome: UpgradeOutcome = 'ok';
    let upstreamClosed = false;
    let clientClosed = false;
    /** The client sent FIN (node:http sockets are half-open, so 'close' may come much later). */
    let clientEnded = false;
    let received: Buffer[] = [];
    let receivedBytes = 0;

    const clientAddress = (socket as net.Socket).remoteAddress ?? req.socket?.remoteAddress;
    const proto = (socket as { encrypted?: boolean }).encrypted ? 'https' : 'http';
    const upstream = net.connect({ host: target.host, port: target.port });
    upstream.setNoDelay(true);
    let timer: NodeJS.Timeout | undefined = setTimeout(() => {
      timer = undefined;
      if (phase !== 'connecting') return;
      upstream.destroy();
      notSent();
    }, connectTimeoutMs);

    const end = (result: UpgradeOutcome) => {
      if (phase === 'done') return;
      phase = 'done';
      if (timer !== undefined) clearTimeout(timer);
      resolve(result);
    };
    const settleWhenBothClosed = () => {
      if (upstreamClosed && clientClosed) end(outcome);
    };
    const workerFailed = (message: string) => {
      if (phase === 'handshake') {
        answerUpgrade(
          socket,
          new GatewayError('WORKER_ERROR', message, { metadata: { workerId: options.workerId } }),
          responseHeaders,
        );
      } else {
        socket.destroy();
      }
      outcome = 'worker-error';
    };

    const onClientError = () => {
      socket.destroy();
    };
    const onClientClose = () => {
      clientClosed = true;
      if (phase === 'done') return;
      if (phase === 'connecting') {
        upstream.destroy();
        end('client-gone');
        return;
      }
      if (phase === 'handshake' && outcome === 'ok') outcome = 'client-gone';
      closeAfterFlush(upstream);
      settleWhenBothClosed();
    };
    const onClientEnd = () => {
      clientEnded = true;
    };
    socket.on('error', onClientError);
    socket.on('close', onClientClose);
    socket.on('end', onClientEnd);
    /** The worker cannot be reached: leave the client's socket as it was found, for a retry or an answer. */
    const notSent = () => {
      socket.off('error', onClientError);
      socket.off('close', onClientClose);
      socket.off('end', onClientEnd);
      end('not-sent');
    };

    upstream.on('error', (error) => {
      if (phase === 'connecting') {
        upstream.destroy();
        if (clientClosed) end('client-gone');
        else notSent();
        return;
      }
      if (phase === 'handshake' || phase === 'open') workerFailed(error.message);
    });
    upstream.on('close', () => {
      upstreamClosed = true;
      // Connecting: 'error' or the connect timer settled it, and the client's socket is the caller's again.
      if (phase === 'connecting' || phase === 'done') return;
      if (phase === 'handshake' && outcome === 'ok') {
        if (clientClosed || clientEnded) {
          outcome = 'client-gone';
          closeAfterFlush(socket);
        } else {
          workerFailed('The worker closed the connection before answering the upgrade.');
        }
      } else {
        closeAfterFlush(socket);
      }
      settleWhenBothClosed();
    });

    upstream.once('connect', () => {
      if (phase !== 'connecting') return;
      phase = 'handshake';
      if (timer !== undefined) clearTimeout(timer);
      timer = setTimeout(() => {
        timer = undefined;
        if (phase !== 'handshake') return;
        answerUpgrade(
          socket,
          new GatewayError('REQUEST_TIMEOUT', 'The worker did not answer the upgrade in time.', {
            metadata: { workerId: options.workerId, timeoutMs: handshakeTimeoutMs },
          }),
          responseHeaders,
        );
        outcome = 'timeout';
        upstream.destroy();
      }, handshakeTimeoutMs);
      (socket as net.Socket).setNoDelay?.(true);
      upstream.write(requestHead(req, target, clientAddress, proto), 'latin1');
      if (head.length > 0) upstream.write(head);
      socket.pipe(upstream);
      upstream.on('data', onHeadData);
    });

    const onHeadData = (chunk: Buffer) => {
      received.push(chunk);
      receivedBytes += chunk.length;
      const all = received.length === 1 ? chunk : Buffer.concat(received, receivedBytes);
      const at = all.indexOf(HEAD_END);
      if (at === -1) {
        received = [all];
        if (receivedBytes > MAX_HEAD_BYTES) {
          upstream.off('data', onHeadData);
          workerFailed('The worker sent a response head that is too large.');
          upstream.destroy();
        }
        return;
      }
      upstream.pause();
      upstream.off('data', onHeadData);
      received = [];
      phase = 'open';
      if (timer !== undefined) {
        clearTimeout(timer);
        timer = undefined;
      }
      const headText = all.toString('latin1', 0, at + 2); // status line and header lines, each ending in CRLF
      options.onResponse?.(Number(STATUS_LINE.exec(headText)?.[1] ?? 0));
      socket.write(rewriteResponseHead(headText, responseHeaders), 'latin1');
      if (at + 4 < all.length) socket.write(all.subarray(at + 4));
      upstream.pipe(socket);
    };
  });
}

/** The request line and headers to send to the worker, ending with the blank line. */
function requestHead(
  req: IncomingMessage,
  target: UpgradeTarget,
  clientAddress: string | undefined,
  proto: string,
): string {
  const headers = forwardRequestHeaders(req.rawHeaders, clientAddress, proto);
  const host = target.host.includes(':') ? `[${target.host}]` : target.host;
  let text = `${req.method ?? 'GET'} ${req.url ?? '/'} HTTP/1.1\r\nHost: ${host}:${target.port}\r\n`;
  for (let i = 0; i + 1 < headers.length; i += 2) text += `${headers[i]}: ${headers[i + 1]}\r\n`;
  const upgrade = req.headers.upgrade;
  text += `Connection: Upgrade\r\n`;
  if (upgrade !== undefined) text += `Upgrade: ${upgrade}\r\n`;
  return `${text}\r\n`;
}

/** Adds `extra` to a response head (status line + header lines, each CRLF-terminated), replacing same names. */
function rewriteResponseHead(head: string, extra: Record<string, string> | undefined): string {
  if (!extra) return `${head}\r\n`;
  const names = Object.keys(extra).map((name) => name.toLowerCase());
  const lines = head.split('\r\n');
  let out = `${lines[0] ?? ''}\r\n`;
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i] as string;
    if (line === '') continue;
    const colon = line.indexOf(':');
    if (colon > 0 && names.includes(line.slice(0, colon).trim().toLowerCase())) continue;
    out += `${line}\r\n`;
  }
  for (const [name, value] of Object.entries(extra)) out += `${name}: ${value}\r\n`;
  return `${out}\r\n`;
}

/** Ends a socket's writable side once its queued writes are out, then destroys it; at once if it is broken. */
function closeAfterFlush(stream: Duplex): void {
  if (stream.destroyed) return;
  if (stream.writableFinished || (!stream.writable && !stream.writableEnded)) {
    stream.destroy();
    return;
  }
  stream.once('finish', () => stream.destroy());
  if (!stream.writableEnded) stream.end();
  // A peer that never reads must not hold the tunnel open.
  const fallback = setTimeout(() => stream.destroy(), CLOSE_GRACE_MS);
  fallback.unref();
  stream.once('close', () => clearTimeout(fallback));
}
