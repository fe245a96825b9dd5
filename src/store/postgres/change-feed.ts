/**
 * `ChangeFeed`: a dedicated PostgreSQL connection that LISTENs on a few channels and hands each notification to
 * its listener. When the connection breaks it says so (`onState(false)`: readers poll meanwhile) and reconnects
 * with backoff (100 ms doubling to 5 s); once it listens again it says so (`onState(true)`: readers re-read what
 * they may have missed). Notifications sent while it was down are lost, which is why readers re-read then.
 */
import pg from 'pg';

/** What the feed needs of a pg client (pg.Client has it). */
export interface ListenerClient {
  connect(): Promise<unknown>;
  query(text: string): Promise<unknown>;
  end(): Promise<void>;
  on(event: 'notification', listener: (message: { channel: string; payload?: string }) => void): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
  on(event: 'end', listener: () => void): unknown;
}

/** Timer functions (the store imports no service; `Timers` of ports/clock.ts fits). */
export interface FeedTimers {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export interface ChangeFeedOptions {
  connect: () => ListenerClient;
  channels: readonly string[];
  onNotification: (channel: string, payload: string) => void;
  /** Up (listening on every channel) or down; called on each change. */
  onState: (up: boolean) => void;
  timers: FeedTimers;
  logger: { info(fields: object, message: string): void; warn(fields: object, message: string): void };
}

const FIRST_RETRY_MS = 100;
const MAX_RETRY_MS = 5_000;

/** A PostgreSQL channel name for this schema: tests' schemas share one database, and channels are per database. */
export function channelFor(schema: string, name: string): string {
  const channel = schema === 'public' ? `corral_${name}` : `corral_${name}_${schema}`;
  return channel.slice(0, 63);
}

/** The listener client of a pool's settings: same URL, same schema. */
export function listenerClient(connectionString: string, schema: string | undefined): () => ListenerClient {
  return () =>
    new pg.Client({
      connectionString,
      ...(schema ? { options: `-c search_path=${schema}` } : {}),
    }) as unknown as ListenerClient;
}

export class ChangeFeed {
  readonly #o: ChangeFeedOptions;
  #client: ListenerClient | undefined;
  #up = false;
  #closed = false;
  #retryMs = FIRST_RETRY_MS;
  #timer: unknown;
  #failing = false;

  constructor(options: ChangeFeedOptions) {
    this.#o = options;
  }

  /** Whether it listens now. */
  get up(): boolean {
    return this.#up;
  }

  /** Connects (in the background: a database down now is retried). */
  start(): void {
    void this.#connect();
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#o.timers.clearTimeout(this.#timer);
    const client = this.#client;
    this.#client = undefined;
    this.#setUp(false);
    await client?.end().catch(() => undefined);
  }

  async #connect(): Promise<void> {
    if (this.#closed) return;
    const client = this.#o.connect();
    this.#client = client;
    let broken = false;
    const lost = (error?: Error) => {
      if (broken || this.#client !== client) return;
      broken = true;
      this.#client = undefined;
      this.#setUp(false);
      if (!this.#failing) this.#o.logger.warn({ err: error }, 'change feed lost; polling until it is back');
      this.#failing = true;
      void client.end().catch(() => undefined);
      this.#retry();
    };
    client.on('error', lost);
    client.on('end', () => lost());
    client.on('notification', (message) => {
      if (this.#client === client) this.#o.onNotification(message.channel, message.payload ?? '');
    });
    try {
      await client.connect();
      for (const channel of this.#o.channels) await client.query(`LISTEN "${channel}"`);
    } catch (error) {
      lost(error as Error);
      return;
    }
    if (broken || this.#closed) return;
    this.#retryMs = FIRST_RETRY_MS;
    if (this.#failing) this.#o.logger.info({}, 'change feed listening again');
    this.#failing = false;
    this.#setUp(true);
  }

  #retry(): void {
    if (this.#closed) return;
    const wait = this.#retryMs;
    this.#retryMs = Math.min(MAX_RETRY_MS, this.#retryMs * 2);
    this.#timer = this.#o.timers.setTimeout(() => void this.#connect(), wait);
  }

  #setUp(up: boolean): void {
    if (this.#up === up) return;
    this.#up = up;
    this.#o.onState(up);
  }
}
