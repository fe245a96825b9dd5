/**
 * `run` and `runsync` bodies read and parsed off the event loop when they are large. A body of 9.5 MiB took 150 to
 * 200 ms of the event loop's thread to gather, decode, parse, re-serialise and count on this project's CI machine
 * (issue 29's tenant-isolation bench, profiled), in front of every other tenant's requests; even gathering it into
 * one buffer and copying that took 60 ms there. So a body goes, from its first `threadFromBytes` on, to a thread of
 * its own a chunk at a time as it arrives; that thread gathers it and runs the contract's own `splitRunBody` (from
 * its source, so that no separate file has to be found next to the compiled code or under the test runner), and the
 * event loop gets back the input's text, its size and the few other fields, and validates those (`runRequestOf`).
 * Smaller bodies are parsed in place: a thread's round trip costs more than they do.
 */
import type { IncomingMessage } from 'node:http';
import { Worker } from 'node:worker_threads';
import {
  type Parsed,
  type RunBodySplit,
  type RunRequest,
  runRequestOf,
  splitRunBody,
} from '../contract/jobs.js';
import { nestsDeeperThan } from '../contract/json-depth.js';
import { JOB_LIMITS } from '../domain/job.js';
import { readBodyChunks } from './http-io.js';

/** Bodies from this size are parsed on the thread: 1 MiB, a few milliseconds of parse in place. */
export const THREAD_FROM_BYTES = 1024 * 1024;

const utf8Bytes = (text: string) => Buffer.byteLength(text);

/**
 * The thread's program (CommonJS, `eval`): bodies by id, their chunks gathered until `parse` or `drop`. `__name` is
 * what esbuild's keep-names option (tsx's) may call inside a function's source; it is defined so that the functions'
 * source runs however this module was compiled.
 */
const THREAD_SOURCE = `
const { parentPort } = require('node:worker_threads');
var __name = (target) => target;
const nestsDeeperThan = ${nestsDeeperThan.toString()};
const splitRunBody = ${splitRunBody.toString()};
const bodies = new Map();
parentPort.on('message', ({ kind, id, chunk, maxDepth }) => {
  if (kind === 'chunk') {
    const parts = bodies.get(id) || [];
    parts.push(Buffer.from(chunk));
    bodies.set(id, parts);
    return;
  }
  const parts = bodies.get(id) || [];
  bodies.delete(id);
  if (kind !== 'parse') return;
  let reply;
  try {
    reply = { id, split: splitRunBody(Buffer.concat(parts).toString('utf8'), maxDepth, nestsDeeperThan, (t) => Buffer.byteLength(t)) };
  } catch (error) {
    reply = { id, error: String((error && error.message) || error) };
  }
  parentPort.postMessage(reply);
});
`;

type Reply = { id: number; split?: RunBodySplit; error?: string };

export class RunBodyParser {
  readonly #threadFromBytes: number;
  #thread: Worker | undefined;
  readonly #pending = new Map<number, { resolve(reply: Reply): void; reject(error: Error): void }>();
  #nextId = 1;

  constructor(options: { threadFromBytes?: number } = {}) {
    this.#threadFromBytes = options.threadFromBytes ?? THREAD_FROM_BYTES;
  }

  /**
   * Reads a request's body (at most `limitBytes`, else BODY_TOO_LARGE naming `what`), asks `admit` with its size
   * once it is read (it throws to refuse; nothing is parsed then), and parses it: the request it makes, or what is
   * wrong with it (the same answers in place and on the thread).
   */
  async read(
    req: IncomingMessage,
    limitBytes: number,
    what: string,
    admit: (size: number) => void,
  ): Promise<Parsed<RunRequest>> {
    const here: Buffer[] = [];
    let onThread: { id: number; thread: Worker } | undefined;
    let held = 0;
    const take = (chunk: Buffer) => {
      if (onThread) return this.#send(onThread, chunk);
      here.push(chunk);
      held += chunk.length;
      if (held < this.#threadFromBytes) return;
      onThread = { id: this.#nextId++, thread: this.#started() };
      for (const part of here.splice(0)) this.#send(onThread, part);
    };
    try {
      admit(await readBodyChunks(req, limitBytes, what, take));
    } catch (error) {
      onThread?.thread.postMessage({ kind: 'drop', id: onThread.id });
      throw error;
    }
    if (!onThread)
      return runRequestOf(
        splitRunBody(Buffer.concat(here).toString('utf8'), JOB_LIMITS.jsonDepth, nestsDeeperThan, utf8Bytes),
      );
    const reply = await this.#parseOnThread(onThread);
    if (reply.split === undefined) throw new Error(`the body thread failed: ${reply.error ?? 'no answer'}`);
    return runRequestOf(reply.split);
  }

  /** Ends the thread, if one was started (a read after this starts another). */
  async close(): Promise<void> {
    const thread = this.#thread;
    this.#thread = undefined;
    await thread?.terminate();
  }

  #send(to: { id: number; thread: Worker }, chunk: Buffer): void {
    // A copy of the chunk is handed over (transferred): the socket's Buffer may share its memory with others.
    const copy = new Uint8Array(chunk);
    to.thread.postMessage({ kind: 'chunk', id: to.id, chunk: copy }, [copy.buffer]);
  }

  #parseOnThread(on: { id: number; thread: Worker }): Promise<Reply> {
    if (on.thread !== this.#thread)
      return Promise.reject(new Error('the body thread ended while it read the body'));
    return new Promise<Reply>((resolve, reject) => {
      this.#pending.set(on.id, { resolve, reject });
      on.thread.postMessage({ kind: 'parse', id: on.id, maxDepth: JOB_LIMITS.jsonDepth });
    });
  }

  #started(): Worker {
    if (this.#thread) return this.#thread;
    const thread = new Worker(THREAD_SOURCE, { eval: true });
    // An idle thread does not keep the process alive; `close` ends it when the server stops.
    thread.unref();
    thread.on('message', (reply: Reply) => {
      const waiting = this.#pending.get(reply.id);
      this.#pending.delete(reply.id);
      waiting?.resolve(reply);
    });
    const fail = (error: Error) => {
      if (this.#thread === thread) this.#thread = undefined;
      for (const waiting of this.#pending.values()) waiting.reject(error);
      this.#pending.clear();
    };
    thread.on('error', fail);
    thread.on('exit', (code) => fail(new Error(`the body thread ended (exit code ${code})`)));
    this.#thread = thread;
    return thread;
  }
}
