/**
 * Follows the engine's event stream and reconnects with capped exponential backoff when it ends or fails,
 * resuming from the last event seen (`since`) so nothing in between is lost; replays are dropped. The log says once
 * that the stream is lost and once that it is back, however many attempts an engine outage takes.
 */
import type { Logger } from 'pino';
import type { RuntimeEvent } from '../types.js';
import { reasonOf } from './engine-errors.js';
import { type DockerEventMessage, eventFromDocker } from './worker-state.js';

export interface EventWatchOptions {
  /** Opens `GET /events`, live or from `sinceSeconds` (fractional); the stream ends when `signal` aborts. */
  open: (sinceSeconds: number | undefined, signal: AbortSignal) => Promise<AsyncIterable<Buffer | string>>;
  onEvent: (event: RuntimeEvent) => void;
  logger: Logger;
  clock: () => number;
  initialBackoffMs?: number;
  maxBackoffMs?: number;
}

const REMEMBERED = 256;

export class EventWatch {
  readonly #abort = new AbortController();
  #timer: NodeJS.Timeout | undefined;
  #attempt = 0;
  /** Undefined until the first connection: that one streams live, reconnections resume from here. */
  #sinceSeconds: number | undefined;
  readonly #seen: string[] = [];
  readonly #options: EventWatchOptions;
  /** Since the stream was lost and until it is open again: further failures are logged at debug level only. */
  #lost = false;

  constructor(options: EventWatchOptions) {
    this.#options = options;
    void this.#connect();
  }

  get closed(): boolean {
    return this.#abort.signal.aborted;
  }

  close(): void {
    this.#abort.abort();
    clearTimeout(this.#timer);
  }

  async #connect(): Promise<void> {
    if (this.closed) return;
    try {
      const stream = await this.#options.open(this.#sinceSeconds, this.#abort.signal);
      if (this.#lost) {
        this.#lost = false;
        this.#options.logger.info('docker event stream reconnected');
      }
      // A second back absorbs clock skew with the engine; a replayed exit is harmless to a level-triggered reader.
      this.#sinceSeconds ??= this.#options.clock() / 1000 - 1;
      await this.#consume(stream);
      if (!this.closed) this.#streamLost(undefined, 'docker event stream ended; reconnecting');
    } catch (error) {
      if (this.closed) return;
      this.#streamLost(reasonOf(error), 'docker event stream failed; reconnecting');
    }
    this.#scheduleReconnect();
  }

  #streamLost(reason: string | undefined, message: string): void {
    const fields = reason === undefined ? {} : { reason };
    if (this.#lost) {
      this.#options.logger.debug(fields, message);
      return;
    }
    this.#lost = true;
    this.#options.logger.warn(fields, message);
  }

  #scheduleReconnect(): void {
    if (this.closed) return;
    const initial = this.#options.initialBackoffMs ?? 200;
    const delay = Math.min(this.#options.maxBackoffMs ?? 5_000, initial * 2 ** this.#attempt);
    this.#attempt += 1;
    this.#timer = setTimeout(() => void this.#connect(), delay);
    this.#timer.unref?.();
  }

  async #consume(stream: AsyncIterable<Buffer | string>): Promise<void> {
    let rest = '';
    for await (const chunk of stream) {
      if (this.closed) return;
      const lines = (rest + chunk.toString()).split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines) this.#handle(line);
    }
  }

  #handle(line: string): void {
    if (line.trim() === '') return;
    let message: DockerEventMessage;
    try {
      message = JSON.parse(line) as DockerEventMessage;
    } catch {
      this.#options.logger.warn({ line: line.slice(0, 200) }, 'unreadable docker event');
      return;
    }
    this.#attempt = 0;
    if (!this.#remember(message)) return;
    const event = eventFromDocker(message);
    if (!event) return;
    try {
      this.#options.onEvent(event);
    } catch (error) {
      this.#options.logger.error({ err: error }, 'runtime event handler threw');
    }
  }

  /** Records the event; false when it was already delivered (a replay after reconnecting with `since`). */
  #remember(message: DockerEventMessage): boolean {
    const key = `${message.timeNano ?? message.time}|${message.Actor?.ID}|${message.Action ?? message.status}`;
    if (this.#seen.includes(key)) return false;
    this.#seen.push(key);
    if (this.#seen.length > REMEMBERED) this.#seen.shift();
    const seconds = message.timeNano ? message.timeNano / 1e9 : message.time;
    // A microsecond back: the float may round past the event, and replays are dropped above anyway.
    if (seconds !== undefined) this.#sinceSeconds = Math.max(this.#sinceSeconds ?? 0, seconds - 1e-6);
    return true;
  }
}
