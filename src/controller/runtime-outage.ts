/**
 * Whether the runtime (the container engine) can be reached, as the controller last found it: when it stopped
 * answering and why, said once in the log when it goes away and once when it returns, and noted on the message of
 * every active worker meanwhile (restored afterwards), so that the API shows the outage within a pass.
 */

import { RuntimeError } from '../runtime/types.js';
import type { ControllerLogger } from './controller-options.js';
import type { ManagedWorker } from './workers/managed-worker.js';

/** States whose message the outage overwrites: pulling keeps its progress, draining and failed their reason. */
const NOTED_STATES = new Set(['pending', 'starting', 'running', 'unhealthy']);

export class RuntimeOutage {
  readonly #logger: ControllerLogger;
  #since: number | undefined;
  #reason = '';
  /** Worker id -> its message before the outage was noted on it. */
  readonly #noted = new Map<string, string>();

  constructor(options: { logger: ControllerLogger }) {
    this.#logger = options.logger;
  }

  /** "container engine unreachable since 12:01:03 UTC: <reason>" during an outage, else undefined. */
  get text(): string | undefined {
    if (this.#since === undefined) return undefined;
    return `container engine unreachable since ${clockTime(this.#since)}: ${this.#reason}`;
  }

  /** A runtime call found the runtime unreachable; logged only when this begins an outage. */
  failed(error: unknown, now: number): void {
    const reason = error instanceof Error ? error.message : String(error);
    if (this.#since !== undefined) {
      this.#reason = reason;
      return;
    }
    this.#since = now;
    this.#reason = reason;
    this.#logger.warn(
      { reason, since: new Date(now).toISOString() },
      'container engine unreachable; workers that still answer keep serving, no new worker can start',
    );
  }

  /**
   * A runtime call succeeded: the outage (if any) is over, said once, and the workers it was noted on get their
   * own message back. Returns those workers.
   */
  reachable(now: number, recordOf: (workerId: string) => ManagedWorker | undefined): ManagedWorker[] {
    if (this.#since === undefined) return [];
    const text = this.text;
    this.#logger.info(
      { since: new Date(this.#since).toISOString(), downMs: now - this.#since },
      'container engine reachable again',
    );
    this.#since = undefined;
    const restored: ManagedWorker[] = [];
    for (const [workerId, message] of this.#noted) {
      const record = recordOf(workerId);
      if (record && record.message === text) {
        record.message = message;
        restored.push(record);
      }
    }
    this.#noted.clear();
    return restored;
  }

  /** Writes the outage into the message of every active worker; returns those whose message changed. */
  note(records: Iterable<ManagedWorker>): ManagedWorker[] {
    const text = this.text;
    if (text === undefined) return [];
    const changed: ManagedWorker[] = [];
    for (const record of records) {
      if (!NOTED_STATES.has(record.state) || record.message === text) continue;
      if (!this.#noted.has(record.id)) this.#noted.set(record.id, record.message);
      record.message = text;
      changed.push(record);
    }
    return changed;
  }
}

/** 12:01:03 UTC: the outage is minutes old at most, the day is not news. */
function clockTime(at: number): string {
  return `${new Date(at).toISOString().slice(11, 19)} UTC`;
}

/** Whether a runtime call failed because the runtime could not be reached (every runtime says so the same way). */
export function isRuntimeUnreachable(error: unknown): error is RuntimeError {
  return error instanceof RuntimeError && error.code === 'UNAVAILABLE';
}

/** Log fields for a failed runtime call: an unreachable runtime gets its message only, not a stack trace each time. */
export function runtimeErrorFields(error: unknown): object {
  return isRuntimeUnreachable(error) ? { error: error.message } : { err: error };
}
