/**
 * The one place that turns a worker's lifecycle into log lines a person can read at `corral serve`'s terminal (and
 * that a log collector gets the same facts from, as fields): one line per start and per ready (with the time it
 * took), one WARN per failure with its cause (the endpoint's event message, its exit code, the last line of its
 * output), and a crash loop said once with its backoff instead of a line per worker. Every line names the endpoint
 * by name beside its id. The lines are pure functions of plain data (tested with a fixed clock); the class keeps
 * which crash loops were told.
 */
import type { Endpoint } from '../../domain/endpoint.js';
import type { NewEvent } from '../../domain/records.js';
import type { Clock } from '../../ports/clock.js';
import type { ControllerLogger } from '../controller-options.js';
import type { BackoffPolicy, CrashRecord } from '../crashes/backoff.js';

/** A worker's failure as the lifecycle knew it when it failed: its endpoint's event and the run it belongs to. */
export interface FailureNote {
  endpointId: string;
  /** The `crashed` or `failed` event of the endpoint's log (crash-event.ts). */
  event: NewEvent;
  /** The endpoint's run of failures, this one included. */
  crash: CrashRecord;
}

export interface LogLine {
  level: 'debug' | 'info' | 'warn';
  fields: Record<string, unknown>;
  message: string;
}

/** A crash loop is told again after this long even when its cause has not changed: it is still going on. */
export const CRASH_LOOP_RETELL_MS = 10 * 60_000;
/** The longest output line quoted in a log line (the worker's log has the whole). */
const OUTPUT_QUOTE_CHARS = 200;
/** Output lines kept in the JSON field `output`. */
const OUTPUT_FIELD_LINES = 3;

/** `endpoint sdxl (ep_123)`, or `endpoint ep_123` when its name is not known (deleted). */
export function endpointLabel(endpointId: string, name: string | undefined): string {
  return name === undefined || name === endpointId
    ? `endpoint ${endpointId}`
    : `endpoint ${name} (${endpointId})`;
}

/** The fields every worker line carries. */
function workerFields(
  endpointId: string,
  name: string | undefined,
  workerId: string,
): Record<string, unknown> {
  return { endpointId, ...(name === undefined ? {} : { endpointName: name }), workerId };
}

/** `15 s`, `2 min`, `850 ms`: a span as a person says it. */
export function spanText(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < 10_000) return `${Number((ms / 1000).toFixed(1))} s`;
  if (ms < 120_000) return `${Math.round(ms / 1000)} s`;
  return `${Math.round(ms / 60_000)} min`;
}

/** The last lines of a worker's output that say something (blank lines dropped), the newest last. */
export function lastOutputLines(output: readonly string[], count = OUTPUT_FIELD_LINES): string[] {
  const said = output.map((line) => line.trimEnd()).filter((line) => line.trim() !== '');
  return said.slice(-count);
}

function quoted(line: string): string {
  const cut = line.length > OUTPUT_QUOTE_CHARS ? `…${line.slice(-OUTPUT_QUOTE_CHARS)}` : line;
  return JSON.stringify(cut.trim());
}

/** The crash loop's text last told for an endpoint: when, and with which cause. */
export interface LoopTold {
  at: number;
  cause: string;
}

/**
 * The line for one failure. Before the run counts as a crash loop (the ledger's policy), each failure is a WARN with
 * its cause; the failure that makes it one is a WARN saying so, with the run's length and the wait before the next
 * worker; later ones of the same cause are debug until CRASH_LOOP_RETELL_MS has passed. `loopTold` is what the
 * line tells from now on (undefined: not a crash loop).
 */
export function failureLine(input: {
  note: FailureNote;
  endpointName: string | undefined;
  output: readonly string[];
  policy: BackoffPolicy;
  loopTold: LoopTold | undefined;
  now: number;
}): { line: LogLine; loopTold: LoopTold | undefined } {
  const { note, endpointName, policy, now } = input;
  const { event, crash, endpointId } = note;
  const data = event.data ?? {};
  const workerId = String(data.workerId ?? '');
  const code = String(data.error ?? '');
  const output = lastOutputLines(input.output);
  const lastLine = output.at(-1);
  const said = lastLine === undefined ? '' : `: ${quoted(lastLine)}`;
  const exitCode = typeof data.exitCode === 'number' ? data.exitCode : undefined;
  const exitReason = typeof data.reason === 'string' && data.reason !== '' ? data.reason : undefined;
  const fields: Record<string, unknown> = {
    ...workerFields(endpointId, endpointName, workerId),
    cause: code,
    reason: crash.lastMessage || event.message,
    ...(exitCode === undefined ? {} : { exitCode }),
    ...(exitReason === undefined ? {} : { exitReason }),
    ...(output.length > 0 ? { output } : {}),
    failures: crash.failures,
  };
  const label = endpointLabel(endpointId, endpointName);
  if (crash.failures < policy.crashLoopAfter) {
    return {
      line: { level: 'warn', fields, message: `${label}: ${event.message}${said}` },
      loopTold: undefined,
    };
  }
  const cause = `${crash.lastMessage}${said}`;
  const told = input.loopTold;
  if (told && told.cause === cause && now - told.at < CRASH_LOOP_RETELL_MS) {
    return { line: { level: 'debug', fields, message: `${label}: ${event.message}${said}` }, loopTold: told };
  }
  const verb = event.type === 'crashed' ? 'crashed' : 'failed';
  const message =
    `${label}: worker ${verb} ${crash.failures} times in ${spanText(crash.lastAt - crash.firstAt)} (${cause}); ` +
    `next try in ${spanText(crash.retryAt - now)}`;
  const loopFields = { ...fields, crashLoop: true, nextTryMs: Math.max(0, crash.retryAt - now) };
  return { line: { level: 'warn', fields: loopFields, message }, loopTold: { at: now, cause } };
}

export interface WorkerLogOptions {
  logger: ControllerLogger;
  /** The live endpoints as of the last pass (their names). */
  endpoints: () => ReadonlyMap<string, Endpoint>;
  policy: BackoffPolicy;
  clock: Clock;
}

type WorkerRef = { id: string; endpointId: string };

export class WorkerLog {
  readonly #o: WorkerLogOptions;
  readonly #loopsTold = new Map<string, LoopTold>();

  constructor(options: WorkerLogOptions) {
    this.#o = options;
  }

  /**
   * A worker's container runs. A worker that retries a run of failures is said at debug: the failure's line already
   * said a next one was coming, and a crash loop would otherwise print a start per try.
   */
  started(worker: WorkerRef, crash: CrashRecord): void {
    const name = this.#nameOf(worker.endpointId);
    this.#write({
      level: crash.failures > 0 ? 'debug' : 'info',
      fields: workerFields(worker.endpointId, name, worker.id),
      message: `${endpointLabel(worker.endpointId, name)}: worker ${worker.id} started`,
    });
  }

  /** A worker passed its health check for the first time, `ms` after it was created (undefined: adopted, unknown). */
  ready(worker: WorkerRef, ms: number | undefined): void {
    const name = this.#nameOf(worker.endpointId);
    const took = ms === undefined ? '' : ` in ${spanText(ms)}`;
    this.#write({
      level: 'info',
      fields: {
        ...workerFields(worker.endpointId, name, worker.id),
        ...(ms === undefined ? {} : { readyMs: ms }),
      },
      message: `${endpointLabel(worker.endpointId, name)}: worker ${worker.id} ready${took}`,
    });
  }

  /** A worker's health check fails with a cause not told before (health-report.ts decides when). */
  healthFailing(worker: WorkerRef, path: string, cause: string): void {
    const name = this.#nameOf(worker.endpointId);
    this.#write({
      level: 'warn',
      fields: { ...workerFields(worker.endpointId, name, worker.id), path, cause },
      message: `${endpointLabel(worker.endpointId, name)}: worker ${worker.id} health check ${path} failing: ${cause}`,
    });
  }

  /** A worker is drained and removed (scaled down, replaced, its endpoint deleted). */
  stopping(worker: WorkerRef, reason: string): void {
    const name = this.#nameOf(worker.endpointId);
    this.#write({
      level: 'info',
      fields: { ...workerFields(worker.endpointId, name, worker.id), reason },
      message: `${endpointLabel(worker.endpointId, name)}: worker ${worker.id} stopping: ${reason}`,
    });
  }

  /** Any other move worth a line (adopted, drained by its owner), with its fields. */
  note(worker: WorkerRef, what: string, fields: Record<string, unknown> = {}): void {
    const name = this.#nameOf(worker.endpointId);
    this.#write({
      level: 'info',
      fields: { ...workerFields(worker.endpointId, name, worker.id), ...fields },
      message: `${endpointLabel(worker.endpointId, name)}: worker ${worker.id} ${what}`,
    });
  }

  /** A worker failed; `output` is the end of its output, read as its container was removed. */
  failed(note: FailureNote, output: readonly string[]): void {
    const { line, loopTold } = failureLine({
      note,
      endpointName: this.#nameOf(note.endpointId),
      output,
      policy: this.#o.policy,
      loopTold: this.#loopsTold.get(note.endpointId),
      now: this.#o.clock(),
    });
    if (loopTold) this.#loopsTold.set(note.endpointId, loopTold);
    else this.#loopsTold.delete(note.endpointId);
    this.#write(line);
  }

  #nameOf(endpointId: string): string | undefined {
    return this.#o.endpoints().get(endpointId)?.spec.name || undefined;
  }

  #write(line: LogLine): void {
    const { logger } = this.#o;
    if (line.level === 'debug') logger.debug?.(line.fields, line.message);
    else logger[line.level](line.fields, line.message);
  }
}
