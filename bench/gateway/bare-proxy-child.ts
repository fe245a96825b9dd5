/**
 * The `bare` role, for reference only: the floor of the gateway's design. A node:http server handing each
 * request to an undici Pool (the same settings as WorkerPools) through `dispatch`, dropping only Connection and
 * Keep-Alive: no routing, slots, queue, timeout, abort signal, header rules or metrics.
 */
import { createServer } from 'node:http';
import { type Dispatcher, Pool } from 'undici';
import { listenLoopback } from './http.js';
import { UPSTREAM_ENV } from './processes.js';
import { serveUntilStopped } from './proxy-child.js';

const hopByHop = (name: string) => {
  const lower = name.toLowerCase();
  return lower === 'connection' || lower === 'keep-alive';
};

/** Runs in the child, until the parent says stop. */
export async function bareProxyChild(): Promise<void> {
  const upstreamPort = Number(process.env[UPSTREAM_ENV]);
  const pool = new Pool(`http://127.0.0.1:${upstreamPort}`, {
    connections: 64,
    pipelining: 1,
    keepAliveTimeout: 4_000,
    headersTimeout: 0,
    bodyTimeout: 0,
  });
  const server = createServer((req, res) => {
    const headers: string[] = [];
    const raw = req.rawHeaders;
    for (let i = 0; i + 1 < raw.length; i += 2) {
      const name = raw[i] as string;
      if (!hopByHop(name)) headers.push(name, raw[i + 1] as string);
    }
    pool.dispatch(
      { path: req.url ?? '/', method: (req.method ?? 'GET') as Dispatcher.HttpMethod, headers, body: null },
      {
        onRequestStart() {},
        onResponseStart(_controller, statusCode, parsed, statusMessage) {
          const out: Record<string, string | string[]> = {};
          for (const [name, value] of Object.entries(parsed)) {
            if (value !== undefined && !hopByHop(name)) out[name] = value;
          }
          res.writeHead(statusCode, statusMessage || undefined, out);
        },
        onResponseData(_controller, chunk) {
          res.write(chunk);
        },
        onResponseEnd() {
          res.end();
        },
        onResponseError() {
          if (!res.headersSent) res.writeHead(502);
          res.end();
        },
      },
    );
  });
  const port = await listenLoopback(server);
  serveUntilStopped(port, async () => {
    server.close();
    server.closeAllConnections();
    await pool.close();
    process.exit(0);
  });
}
