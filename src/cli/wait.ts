/**
 * Waiting for an endpoint to be ready after `create`, `update` or `apply`: polls it through the API, prints each
 * change of its state and of its workers' states and messages (pull progress, health causes, as the API gives them)
 * on stderr, and ends when it serves (ready), fails (CliError with the reason) or the time runs out. On a terminal
 * the progress is one line redrawn in place; otherwise one plain line per change.
 */
import type { CorralClient, WireEndpoint, WireState, WireWorker } from '../client/index.js';
import type { CliDeps } from './deps.js';
import { exampleRequest, pathFormUrl } from './endpoint-format.js';
import { CliError } from './output.js';
import { formatKeyValues } from './table.js';

/**
 * The default startup deadline (controller.startupTimeoutSeconds): a worker not ready by then has failed with its
 * cause, so waiting longer by default only hides it. A server with a longer deadline takes --timeout.
 */
export const DEFAULT_WAIT_SECONDS = 300;
export const POLL_INTERVAL_MS = 1000;

export interface WaitFlags {
  /** --wait / --no-wait; undefined: wait when stdout is a terminal and --json is not given. */
  wait?: boolean;
  /** --timeout, in seconds. */
  timeout?: string;
}

/** Whether a command waits: as asked, else on a terminal without --json. */
export function shouldWait(deps: CliDeps, flags: WaitFlags, json: boolean): boolean {
  return flags.wait ?? (deps.terminal.stdout && !json);
}

/** The --timeout flag in milliseconds. */
export function waitTimeoutMs(flags: WaitFlags): number {
  if (flags.timeout === undefined) return DEFAULT_WAIT_SECONDS * 1000;
  const text = flags.timeout.trim();
  if (!/^\d{1,7}$/.test(text) || Number(text) === 0) {
    throw new CliError(`--timeout must be a positive number of seconds, got "${flags.timeout}"`);
  }
  return Number(text) * 1000;
}

/** The endpoint is ready: it serves, with no error, and as many healthy running workers as its minimum. */
export function isReady(e: WireEndpoint): boolean {
  return e.state.state === 'serving' && e.state.error === '' && readyWorkers(e) >= e.workerConfig.minNum;
}

/** It will not become ready by waiting: failed, stopped or being deleted. */
export function hasFailed(e: WireEndpoint): boolean {
  return e.state.state === 'failed' || e.state.state === 'stopped' || e.state.state === 'deleting';
}

/**
 * Polls endpoint `id` until it is ready (returned), has failed (CliError with its reason) or `timeoutMs` has passed
 * (CliError with its last state), printing every change on stderr.
 */
export async function waitForEndpoint(
  deps: CliDeps,
  client: CorralClient,
  id: string,
  timeoutMs: number,
): Promise<WireEndpoint<number>> {
  const progress = new Progress(deps);
  const deadline = deps.now() + timeoutMs;
  try {
    for (;;) {
      const endpoint = await client.getEndpoint(id);
      progress.show(endpoint);
      if (isReady(endpoint)) return endpoint;
      if (hasFailed(endpoint)) {
        throw new CliError(`endpoint ${endpoint.name || endpoint.id} ${stateText(endpoint.state)}`);
      }
      if (deps.now() >= deadline) throw notReadyError(endpoint, timeoutMs, progress.lastCause);
      await deps.sleep(POLL_INTERVAL_MS);
    }
  } finally {
    progress.end();
  }
}

/**
 * A timeout's error: the state, the last cause seen (whole), and the commands that show more, e.g.
 * `endpoint hello is not ready after 300s: deploying (1 of 1 running)` then `last cause: worker w-1: ...` and
 * `it goes on; see: corral logs hello, corral workers list hello, corral endpoints get <id>`.
 */
export function notReadyError(e: WireEndpoint, timeoutMs: number, lastCause: string | undefined): CliError {
  const name = e.name || e.appName || e.id;
  return new CliError(
    [
      `endpoint ${name} is not ready after ${Math.round(timeoutMs / 1000)}s: ${stateText(e.state)}`,
      ...(lastCause === undefined ? [] : [`last cause: ${lastCause}`]),
      `it goes on; see: corral logs ${name}, corral workers list ${name}, corral endpoints get ${e.id}`,
    ].join('\n'),
  );
}

/**
 * What a worker line says that a person must read whole: a worker that is starting, unhealthy or failed with a
 * message (a health probe's cause, an exit, a failed pull); not pull progress, which changes every poll.
 */
function causeOf(w: WireWorker): string | undefined {
  const { state, message } = w.state;
  if (message === '' || !['starting', 'unhealthy', 'failed'].includes(state)) return undefined;
  return workerProgress(w);
}

/**
 * Prints what changed since the last look: the endpoint's state line and each worker's line. On a terminal the
 * progress is one line redrawn (cut at its width), and each new cause is printed whole on a line of its own above it.
 */
class Progress {
  readonly #deps: CliDeps;
  #endpointLine = '';
  readonly #workerLines = new Map<string, string>();
  /** On a terminal: the line drawn in place, to be ended with a newline. */
  #drawn = '';
  readonly #causesShown = new Set<string>();
  /** The last cause seen (whole), for a timeout's error. */
  lastCause: string | undefined;

  constructor(deps: CliDeps) {
    this.#deps = deps;
  }

  show(e: WireEndpoint): void {
    for (const worker of e.workers) {
      const cause = causeOf(worker);
      if (cause !== undefined) this.lastCause = cause;
    }
    const changed: string[] = [];
    const endpointLine = endpointProgress(e);
    if (endpointLine !== this.#endpointLine) {
      this.#endpointLine = endpointLine;
      changed.push(endpointLine);
    }
    for (const worker of e.workers) {
      const line = workerProgress(worker);
      if (this.#workerLines.get(worker.id) !== line) {
        this.#workerLines.set(worker.id, line);
        changed.push(line);
      }
    }
    if (changed.length === 0) return;
    if (!this.#deps.terminal.stderr) {
      for (const line of changed) this.#deps.stderr(`${line}\n`);
      return;
    }
    // A new cause whole, on its own line (the drawn line cleared first); then the progress line below it.
    for (const worker of e.workers) {
      const cause = causeOf(worker);
      if (cause === undefined || this.#causesShown.has(cause)) continue;
      this.#causesShown.add(cause);
      this.#deps.stderr(`\r\x1b[K${cause}\n`);
    }
    // One line redrawn: the endpoint's state, then the latest worker change.
    const latestWorker = changed.filter((line) => line !== endpointLine).at(-1);
    const line = latestWorker === undefined ? this.#endpointLine : `${this.#endpointLine} | ${latestWorker}`;
    this.#drawn = fitWidth(line, this.#deps.terminal.columns);
    this.#deps.stderr(`\r\x1b[K${this.#drawn}`);
  }

  end(): void {
    if (this.#drawn !== '') this.#deps.stderr('\n');
    this.#drawn = '';
  }
}

/** `deploying: waiting for workers (1 of 2 running)`. */
export function endpointProgress(e: WireEndpoint): string {
  const target = Math.max(e.workerConfig.minNum, e.workers.filter(isActive).length);
  const count = target === 0 ? '' : ` (${readyWorkers(e)} of ${target} running)`;
  return `${stateText(e.state)}${count}`;
}

/** `worker w-1: pulling: 45% of 1.2 GB`. */
export function workerProgress(w: WireWorker): string {
  const health = w.state.state === 'running' && !w.healthy ? ', not healthy yet' : '';
  return `worker ${w.id}: ${stateText(w.state)}${health}`;
}

/** The lines printed once the endpoint is ready: its URLs and requests to paste. */
export function formatReady(e: WireEndpoint): string {
  const name = e.name || e.appName || e.id;
  const pathUrl = pathFormUrl(e);
  const pairs: [string, string][] = [['URL', e.url]];
  if (pathUrl !== undefined) pairs.push(['Path URL', pathUrl]);
  pairs.push(['Call', exampleRequest(e)]);
  if (pathUrl !== undefined) pairs.push(['', exampleRequest(e, pathUrl)]);
  return `endpoint ${name} is ready: ${stateText(e.state)}\n${formatKeyValues(pairs).replace(/^:/gm, ' ')}`;
}

function stateText(state: WireState): string {
  const head = state.error === '' ? state.state : `${state.state} (${state.error})`;
  return state.message === '' ? head : `${head}: ${state.message}`;
}

function readyWorkers(e: WireEndpoint): number {
  return e.workers.filter((w) => w.state.state === 'running' && w.healthy).length;
}

/** A worker that counts toward the endpoint's size: not leaving, not failed. */
function isActive(w: WireWorker): boolean {
  return !['draining', 'stopped', 'failed'].includes(w.state.state);
}

function fitWidth(line: string, columns: number): string {
  const width = Math.max(20, columns - 1);
  return line.length <= width ? line : `${line.slice(0, width - 3)}...`;
}
