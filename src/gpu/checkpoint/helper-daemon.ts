/**
 * The checkpoint helper kept running between calls (`cuda-helper.js --serve`): one child process, in a process
 * group of its own, started on the first call, that loads libcuda and calls cuInit once, then answers one request
 * line with one answer line. Calls are served one at a time; each has its deadline, and at the deadline the whole
 * group is killed (a driver call cannot be interrupted otherwise) and the call rejects, as a one-shot helper's
 * would (run-helper.ts); the next call starts a fresh helper. A helper that exits between calls is started again.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { Logger } from 'pino';
import {
  GpuCheckpointDeadlineError,
  GpuCheckpointHelperError,
} from '../../errors/gpu-checkpoint-catalogue.js';
import { systemTimers, type Timers } from '../../ports/clock.js';
import { type HelperAnswer, type HelperOp, parseServedAnswer } from './helper-protocol.js';
import { type HelperCommand, helperEnv } from './run-helper.js';

export interface HelperDaemonOptions {
  /** How to start the helper; `--serve` is added after its arguments. */
  helper: HelperCommand;
  logger: Logger;
  timers?: Timers;
}

interface Job {
  op: HelperOp;
  params: readonly string[];
  deadlineMs: number;
  resolve: (answer: HelperAnswer) => void;
  reject: (error: Error) => void;
}

interface Running {
  child: ChildProcessWithoutNullStreams;
  /** The last lines of its stderr, for the error of a helper that exits without an answer. */
  stderrTail: string[];
  stderrLogged: number;
}

/** How many stderr lines of one helper process are logged, and how much of each. */
const STDERR_LINES_LOGGED = 50;
const STDERR_LINE_CHARS = 500;

export class HelperDaemon {
  readonly #helper: HelperCommand;
  readonly #logger: Logger;
  readonly #timers: Timers;
  readonly #queue: Job[] = [];
  #running: Running | undefined;
  #active: { job: Job; id: number; timer: unknown } | undefined;
  #nextId = 1;
  #closed = false;

  constructor(options: HelperDaemonOptions) {
    this.#helper = options.helper;
    this.#logger = options.logger;
    this.#timers = options.timers ?? systemTimers;
  }

  /** Whether a helper process is running now (started and not yet exited or killed). */
  get running(): boolean {
    return this.#running !== undefined;
  }

  /**
   * Runs `op` (`params`: the pid, then what follows it) and resolves with the helper's answer, failed or not.
   * Rejects with GpuCheckpointDeadlineError past `deadlineMs` from the call's turn (the helper killed),
   * GpuCheckpointHelperError when the helper exits without the answer or the daemon is closed.
   */
  call(op: HelperOp, params: readonly string[], deadlineMs: number): Promise<HelperAnswer> {
    if (this.#closed) return Promise.reject(closedError(op));
    return new Promise((resolve, reject) => {
      this.#queue.push({ op, params, deadlineMs, resolve, reject });
      this.#next();
    });
  }

  /** Kills the helper and rejects every call not answered yet; later calls reject. */
  close(): void {
    this.#closed = true;
    this.#kill();
    const active = this.#active;
    this.#active = undefined;
    if (active) {
      this.#timers.clearTimeout(active.timer);
      active.job.reject(closedError(active.job.op));
    }
    for (const job of this.#queue.splice(0)) job.reject(closedError(job.op));
  }

  #next(): void {
    if (this.#active || this.#closed) return;
    const job = this.#queue.shift();
    if (!job) return;
    const id = this.#nextId++;
    const timer = this.#timers.setTimeout(() => {
      this.#kill();
      this.#finish(
        id,
        new GpuCheckpointDeadlineError(
          `the driver call (${job.op}) did not return within ${job.deadlineMs} ms`,
          {
            metadata: { op: job.op, params: job.params, deadlineMs: job.deadlineMs },
          },
        ),
      );
    }, job.deadlineMs);
    this.#active = { job, id, timer };
    const running = this.#running ?? this.#start();
    const [pidText, ...args] = job.params;
    const request = { id, op: job.op, ...(pidText === undefined ? {} : { pid: Number(pidText) }), args };
    running.child.stdin.write(`${JSON.stringify(request)}\n`);
  }

  /** Settles the active call `id` (an answer, or the error it rejects with), then serves the next. */
  #finish(id: number, outcome: HelperAnswer | Error): void {
    const active = this.#active;
    if (!active || active.id !== id) return;
    this.#active = undefined;
    this.#timers.clearTimeout(active.timer);
    if (outcome instanceof Error) active.job.reject(outcome);
    else active.job.resolve(outcome);
    this.#next();
  }

  #start(): Running {
    const helper = this.#helper;
    const child = spawn(helper.command, [...helper.args, '--serve'], {
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
      env: helperEnv(process.env, helper.env),
    });
    const running: Running = { child, stderrTail: [], stderrLogged: 0 };
    this.#running = running;
    const current = () => this.#running === running;
    // A helper that died has its stdin closed: the write's error is the exit's, handled below.
    child.stdin.on('error', () => undefined);
    createInterface({ input: child.stdout }).on('line', (line) => {
      const answer = parseServedAnswer(line);
      if (answer && current() && answer.id !== null) {
        const { id, ...rest } = answer;
        this.#finish(id, rest as HelperAnswer);
      }
    });
    createInterface({ input: child.stderr }).on('line', (line) => this.#stderr(running, line));
    child.on('error', (error) => {
      if (!current()) return;
      this.#running = undefined;
      const active = this.#active;
      if (active) {
        this.#finish(
          active.id,
          new GpuCheckpointHelperError(`the checkpoint helper could not start: ${error.message}`, {
            metadata: { op: active.job.op, command: helper.command },
            cause: error,
          }),
        );
      }
    });
    child.on('close', (code, signal) => {
      if (!current()) return;
      this.#running = undefined;
      this.#logger.warn({ pid: child.pid, code, signal }, 'gpu checkpoint helper exited');
      const active = this.#active;
      if (active) {
        this.#finish(
          active.id,
          new GpuCheckpointHelperError(
            `the checkpoint helper (${active.job.op}) exited without an answer (${signal ?? `exit ${code}`})`,
            { metadata: { op: active.job.op, code, signal, stderr: running.stderrTail.join('\n') } },
          ),
        );
      }
    });
    this.#logger.info({ pid: child.pid }, 'gpu checkpoint helper started');
    return running;
  }

  #stderr(running: Running, line: string): void {
    const text = line.slice(0, STDERR_LINE_CHARS);
    running.stderrTail = [...running.stderrTail.slice(-4), text];
    if (running.stderrLogged >= STDERR_LINES_LOGGED) return;
    running.stderrLogged += 1;
    this.#logger.warn({ pid: running.child.pid, line: text }, 'gpu checkpoint helper stderr');
  }

  /** Kills the helper's whole process group; the next call starts a fresh one. */
  #kill(): void {
    const running = this.#running;
    this.#running = undefined;
    if (running?.child.pid === undefined) return;
    try {
      process.kill(-running.child.pid, 'SIGKILL');
    } catch {
      // Gone already.
    }
  }
}

function closedError(op: HelperOp): Error {
  return new GpuCheckpointHelperError(`the checkpoint helper was closed before answering (${op})`, {
    metadata: { op },
  });
}
