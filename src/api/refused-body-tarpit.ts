/**
 * The tarpit for refused bodies (issue 11): a body the API refuses unread (413 over a route's limit, 429, 401) is
 * still read and discarded on a kept-alive connection so that a client that writes its whole body before reading
 * (Python's http.client) gets its answer instead of a broken pipe. Reading it costs the server CPU, so it is read at
 * a bounded rate per owner (per remote address before authentication): a byte budget refilled at `bytesPerSecond`,
 * up to `burstBytes`. Past it, the connection is paused until the budget is paid back, so a flooding client is slowed
 * by its own TCP backpressure instead of taking the server's event loop from the other owners. In this process's
 * memory, like the rate limit, on an injected clock.
 */
import type { IncomingMessage } from 'node:http';
import type { Clock } from '../ports/clock.js';

/**
 * The refusals a client can repeat to take the server's time: past the key's rate, over a body or a quota limit,
 * without a valid key. Each is charged to the tarpit (its minimum, and its body), and its answer waits out the debt.
 */
export const TARPIT_REFUSALS: ReadonlySet<string> = new Set([
  'RATE_LIMITED',
  'BODY_TOO_LARGE',
  'QUOTA_EXCEEDED',
  'UNAUTHENTICATED',
]);

/** The longest one refusal's answer is held back; past it the debt stays for the next ones. */
export const MAX_ANSWER_DELAY_MS = 10_000;

export interface TarpitOptions {
  /** Refused bytes read per second per key once its burst is spent. */
  bytesPerSecond: number;
  /** Refused bytes a key may have read at once. */
  burstBytes: number;
  /** Each refused request costs at least this many bytes, so that many small refused bodies are slowed too. */
  minChargeBytes?: number;
  clock: Clock;
  maxKeys?: number;
}

/**
 * Serve's tarpit: 4 MiB at once (a client's one refused body of a few MiB is read without a wait; a larger burst let
 * the first moment of a flood through at full speed, which showed in the other owner's p99), then 16 MiB a second
 * per owner; each refusal counts at least 256 KiB (a refused create whose 64 KiB body was parsed and checked
 * against the quota costs the server about 3 ms: at most 16 MiB / 320 KiB = 51 a second).
 */
export const REFUSED_BODY_TARPIT = {
  bytesPerSecond: 16 * 2 ** 20,
  burstBytes: 4 * 2 ** 20,
  minChargeBytes: 256 * 1024,
} as const;

/** A byte budget per key that may go into debt: the debt is the wait before that key's refused bodies are read on. */
export class RefusedBodyTarpit {
  readonly #budgets = new Map<string, { bytes: number; at: number }>();
  readonly #o: TarpitOptions;

  constructor(options: TarpitOptions) {
    this.#o = options;
  }

  /** The cost of starting to discard one refused request: its minimum charge (bytes read are charged by take()). */
  get minChargeBytes(): number {
    return this.#o.minChargeBytes ?? 0;
  }

  /** Charges `bytes` to the key; answers how many milliseconds to wait before reading more of its bodies (0: none). */
  take(key: string, bytes: number): number {
    const { bytesPerSecond, burstBytes, clock } = this.#o;
    const now = clock();
    const budget = this.#budgets.get(key) ?? { bytes: burstBytes, at: now };
    budget.bytes = Math.min(burstBytes, budget.bytes + ((now - budget.at) / 1000) * bytesPerSecond) - bytes;
    budget.at = now;
    this.#remember(key, budget);
    return budget.bytes >= 0 ? 0 : Math.ceil((-budget.bytes / bytesPerSecond) * 1000);
  }

  #remember(key: string, budget: { bytes: number; at: number }): void {
    // Least recently used order, as in the rate limit: the oldest key is dropped when full.
    this.#budgets.delete(key);
    this.#budgets.set(key, budget);
    if (this.#budgets.size > (this.#o.maxKeys ?? 10_000)) {
      const oldest = this.#budgets.keys().next().value;
      if (oldest !== undefined) this.#budgets.delete(oldest);
    }
  }
}

/**
 * What a refusal in TARPIT_REFUSALS does to its connection: the rest of an unread body is discarded through the
 * tarpit (or, declared too large to linger for, not read: the connection is closed); the minimum charge and a body
 * already read are charged at once. Answers how long to hold the answer back (so that a client that waits for its
 * answer, as every HTTP/1.1 client on one connection does, sends its next request that much later).
 */
export function chargeRefusal(
  tarpit: RefusedBodyTarpit,
  key: string,
  raw: IncomingMessage,
  body: { lingering: boolean; declaredBytes: number | undefined },
): { delayMs: number; close: boolean } {
  const unread = !raw.complete && raw.readableFlowing === null;
  if (unread && !body.lingering && body.declaredBytes !== undefined) return { delayMs: 0, close: true };
  if (unread) {
    discardThroughTarpit(raw, tarpit, key);
    return { delayMs: Math.min(MAX_ANSWER_DELAY_MS, tarpit.take(key, 0)), close: false };
  }
  const read = raw.complete ? (body.declaredBytes ?? 0) : 0;
  return {
    delayMs: Math.min(MAX_ANSWER_DELAY_MS, tarpit.take(key, tarpit.minChargeBytes + read)),
    close: false,
  };
}

/**
 * Reads and discards the rest of a refused request's body through the tarpit: each chunk is charged to `key`, and
 * the request is paused (so node stops reading its socket, and the client's writes block) for as long as the tarpit
 * says. Must be called before the answer is sent, so that node does not discard the body itself at full speed.
 */
export function discardThroughTarpit(raw: IncomingMessage, tarpit: RefusedBodyTarpit, key: string): void {
  let timer: NodeJS.Timeout | undefined;
  const wait = (ms: number) => {
    if (ms <= 0 || raw.destroyed) return;
    raw.pause();
    clearTimeout(timer);
    timer = setTimeout(() => raw.resume(), ms);
  };
  let first = true;
  // Paused only from a 'data' event on, once node has seen the body being consumed: paused before, node would
  // find it untouched when the answer is sent and discard it itself, at full speed.
  raw.on('data', (chunk: Buffer) => {
    wait(tarpit.take(key, chunk.length + (first ? tarpit.minChargeBytes : 0)));
    first = false;
  });
  raw.once('close', () => clearTimeout(timer));
}
