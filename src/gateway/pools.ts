/**
 * One undici `Pool` per worker address. A pool holds at most the worker's `maxConcurrent` connections (the
 * dispatcher never leases more slots than that, so a request never waits inside undici for a connection once one
 * is open), one request at a time per connection (no pipelining: a slow response must not hold up another), and
 * keeps idle connections for less time than workers keep them, so that the gateway, not the worker, closes an idle
 * connection and a request is not written to a socket the worker is closing at that moment.
 *
 * undici also honours a worker's `Keep-Alive: timeout=N` hint, keeping such a connection for N s minus 2 s (capped
 * at `keepAliveMaxTimeoutMs`). Timeouts for the response are the proxy's (`requestTimeoutMs`), so undici's headers
 * and body timeouts are off.
 */
import { Pool } from 'undici';

export interface WorkerPoolsOptions {
  /** How long an idle connection is kept when the worker sends no Keep-Alive hint; below common server defaults
   * (Node 5 s, uvicorn 5 s). Default 4000. */
  keepAliveTimeoutMs?: number;
  /** Cap on a hinted keep-alive time. Default 60 000. */
  keepAliveMaxTimeoutMs?: number;
  /** TCP connect timeout; a request whose connection times out is `not-sent`. Default 5000. */
  connectTimeoutMs?: number;
  /** Connections for a pool when `get` is given none. Default 1. */
  defaultConnections?: number;
}

/** Where a worker listens: `{host, port}` as leases carry it, or a `host:port` / `http://host:port` string. */
export type PoolAddress = string | { host: string; port: number };

interface Entry {
  pool: Pool;
  connections: number;
}

export class WorkerPools {
  readonly #options: Required<WorkerPoolsOptions>;
  readonly #pools = new Map<string, Entry>();
  readonly #closing = new Set<Promise<void>>();
  #closed = false;

  constructor(options: WorkerPoolsOptions = {}) {
    this.#options = {
      keepAliveTimeoutMs: options.keepAliveTimeoutMs ?? 4_000,
      keepAliveMaxTimeoutMs: options.keepAliveMaxTimeoutMs ?? 60_000,
      connectTimeoutMs: options.connectTimeoutMs ?? 5_000,
      defaultConnections: options.defaultConnections ?? 1,
    };
  }

  /**
   * The pool for a worker, created on first use. `connections` is the worker's `maxConcurrent`; a different value
   * than the existing pool's replaces it (the old one closes once its requests finish).
   */
  get(address: PoolAddress, connections: number = this.#options.defaultConnections): Pool {
    const key = poolKey(address);
    const entry = this.#pools.get(key);
    if (entry !== undefined && entry.connections === connections) return entry.pool;
    if (this.#closed) throw new Error('WorkerPools is closed');
    if (entry !== undefined) this.#closeGracefully(entry.pool);
    const pool = new Pool(`http://${key}`, {
      connections,
      pipelining: 1,
      keepAliveTimeout: this.#options.keepAliveTimeoutMs,
      keepAliveMaxTimeout: Math.max(this.#options.keepAliveMaxTimeoutMs, this.#options.keepAliveTimeoutMs),
      connectTimeout: this.#options.connectTimeoutMs,
      headersTimeout: 0,
      bodyTimeout: 0,
    });
    this.#pools.set(key, { pool, connections });
    return pool;
  }

  has(address: PoolAddress): boolean {
    return this.#pools.has(poolKey(address));
  }

  get size(): number {
    return this.#pools.size;
  }

  /**
   * Forgets a worker that left: its pool closes once the requests it holds have finished (new ones get a fresh
   * pool). If they have not finished after `graceMs`, the pool is destroyed, aborting them.
   */
  drop(address: PoolAddress, graceMs = 30_000): Promise<void> {
    const key = poolKey(address);
    const entry = this.#pools.get(key);
    if (entry === undefined) return Promise.resolve();
    this.#pools.delete(key);
    return this.#closeGracefully(entry.pool, graceMs);
  }

  /** Drops (as `drop` does) the pool of every worker not in `live`: those that left since. */
  retainOnly(live: Iterable<PoolAddress>): void {
    const kept = new Set<string>();
    for (const address of live) kept.add(poolKey(address));
    for (const key of [...this.#pools.keys()]) if (!kept.has(key)) void this.drop(key);
  }

  /** Closes every pool (as `drop` does) and refuses new ones. */
  async close(graceMs = 30_000): Promise<void> {
    this.#closed = true;
    const entries = [...this.#pools.values()];
    this.#pools.clear();
    await Promise.all([
      ...entries.map((entry) => this.#closeGracefully(entry.pool, graceMs)),
      ...this.#closing,
    ]);
  }

  #closeGracefully(pool: Pool, graceMs = 30_000): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const closing = Promise.race([
      pool.close(),
      new Promise<void>((resolve) => {
        timer = setTimeout(() => resolve(pool.destroy()), graceMs);
        timer.unref();
      }),
    ])
      .catch(() => undefined)
      .finally(() => {
        clearTimeout(timer);
        this.#closing.delete(closing);
      });
    this.#closing.add(closing);
    return closing;
  }
}

function poolKey(address: PoolAddress): string {
  if (typeof address !== 'string') {
    return address.host.includes(':') && !address.host.startsWith('[')
      ? `[${address.host}]:${address.port}`
      : `${address.host}:${address.port}`;
  }
  const scheme = address.indexOf('://');
  const rest = scheme === -1 ? address : address.slice(scheme + 3);
  return rest.endsWith('/') ? rest.slice(0, -1) : rest;
}
