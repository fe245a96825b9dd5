/**
 * Tenant A's attack (issue 29 items 3, 4 and 5 at once), run in a child process of its own (attack-child.ts) so that
 * sending and reading hundreds of megabytes costs the measuring process nothing; loopback only, bounded in count and
 * by an abort signal:
 *
 * - item 3 (`answer`): one `run` on the http endpoint whose app answers ANSWER_BYTES of JSON, then its status read
 *   every POLL_MS until it ends (the read that ends it carries the job's output, whatever its size);
 * - item 4 (`hoard`): HOARD_JOBS low-priority `run`s of 9.5 MiB each, HOARD_IN_FLIGHT at once, to a queue endpoint
 *   with no worker;
 * - item 5 (`stream`): one `run` on the queue endpoint whose worker streams STREAM_CHUNKS chunks of 1 MiB, its status
 *   read until it ends, then `stream/{id}` read until a read brings no chunk (at most STREAM_READS reads).
 *
 * `signal` stops it (the suite's time bound, or the server killed at the RSS cap): an item not done by then says
 * where it was. Every answer is counted by status and size; what a fixed server refuses (429, 403, 413, a FAILED
 * job) is reported, not treated as an error of the bench.
 */
import { isJobStatus, isTerminal } from '../../src/domain/job.js';
import { type CountedAnswer, countedRequest } from './counted-http.js';
import {
  HOARD_BODY_BYTES,
  HOARD_IN_FLIGHT,
  HOARD_JOBS,
  ITEMS,
  POLL_MS,
  STREAM_CHUNK_BYTES,
  STREAM_CHUNKS,
  STREAM_READS,
} from './settings.js';

export interface AttackTarget {
  gatewayPort: number;
  token: string;
  answerApp: string;
  hoardApp: string;
  streamApp: string;
}

/** Reads of one kind: how many, their answers by status, their sizes. */
export interface Reads {
  count: number;
  byStatus: Record<string, number>;
  totalBytes: number;
  maxBytes: number;
  /** The slowest one. */
  maxMs: number;
}

export interface JobOutcome {
  /** The `run`'s answer: its status, and the job's id when it was accepted. */
  runStatus: number;
  jobId?: string;
  /** The job's last status seen (or why none). */
  finalStatus: string;
  /** The start of a FAILED job's error, or of a refused run's body. */
  detail?: string;
  seconds: number;
  statusReads: Reads;
}

export interface HoardOutcome {
  sent: number;
  byStatus: Record<string, number>;
  errors: number;
  firstRefusal?: string;
  seconds: number;
}

/** Each item's outcome; an item left out (CORRAL_BENCH_ISOLATION_ITEMS) has none. */
export interface AttackReport {
  answer?: JobOutcome;
  hoard?: HoardOutcome;
  stream?: JobOutcome & { streamReads: Reads };
  /** Requests that failed without an answer (reset, aborted at the bound). */
  errors: string[];
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done);
  });

function emptyReads(): Reads {
  return { count: 0, byStatus: {}, totalBytes: 0, maxBytes: 0, maxMs: 0 };
}

function count(reads: Reads, answer: CountedAnswer): void {
  reads.count += 1;
  reads.byStatus[answer.status] = (reads.byStatus[answer.status] ?? 0) + 1;
  reads.totalBytes += answer.bytes;
  reads.maxBytes = Math.max(reads.maxBytes, answer.bytes);
  reads.maxMs = Math.max(reads.maxMs, answer.ms);
}

/** The job's status from the start of a status body (`{"id":...,"status":"...",...`), whatever follows. */
function statusIn(head: string): string | undefined {
  const status = /"status":"([A-Z_]+)"/.exec(head)?.[1];
  return status !== undefined && isJobStatus(status) ? status : undefined;
}

export async function attack(target: AttackTarget, signal: AbortSignal): Promise<AttackReport> {
  const errors: string[] = [];
  const noted = (what: string) => (error: unknown) => {
    errors.push(`${what}: ${error instanceof Error ? error.message : String(error)}`);
    return undefined;
  };
  const call = (method: 'GET' | 'POST', path: string, body?: Parameters<typeof countedRequest>[0]['body']) =>
    countedRequest({ port: target.gatewayPort, method, path, token: target.token, signal, body });

  /** A `run`, then its status until it ends or the bound. */
  const runAndWait = async (app: string, input: unknown): Promise<JobOutcome> => {
    const started = performance.now();
    const statusReads = emptyReads();
    const outcome = (finalStatus: string, extra: Partial<JobOutcome> = {}): JobOutcome => ({
      runStatus: 0,
      finalStatus,
      seconds: (performance.now() - started) / 1000,
      statusReads,
      ...extra,
    });
    const run = await call('POST', `/v2/${app}/run`, JSON.stringify({ input })).catch(noted(`${app} run`));
    if (!run) return outcome('no answer to the run');
    const jobId = /"id":"([^"]+)"/.exec(run.head)?.[1];
    if (run.status !== 200 || !jobId)
      return outcome('refused', { runStatus: run.status, detail: run.head.slice(0, 300) });
    let last = 'IN_QUEUE';
    let answer: CountedAnswer | undefined;
    while (!signal.aborted) {
      await sleep(POLL_MS, signal);
      answer = await call('GET', `/v2/${app}/status/${jobId}`).catch(noted(`${app} status`));
      if (!answer) break;
      count(statusReads, answer);
      last = statusIn(answer.head) ?? `status ${answer.status}`;
      if (isJobStatus(last) && isTerminal(last)) break;
    }
    const error = answer ? /"error":("(?:[^"\\]|\\.)*")/.exec(answer.head)?.[1] : undefined;
    return outcome(signal.aborted ? `${last} when stopped` : last, {
      runStatus: run.status,
      jobId,
      ...(error ? { detail: (JSON.parse(error) as string).slice(0, 300) } : {}),
    });
  };

  const answer = () => runAndWait(target.answerApp, {});

  const hoard = async (): Promise<HoardOutcome> => {
    const started = performance.now();
    const report: HoardOutcome = { sent: 0, byStatus: {}, errors: 0, seconds: 0 };
    const head = Buffer.from('{"input":{"pad":"');
    const tail = Buffer.from('"},"policy":{"lowPriority":true}}');
    const filler = Buffer.alloc(1024 * 1024, 'x');
    function* pieces(): Iterable<Buffer> {
      yield head;
      for (let left = HOARD_BODY_BYTES - head.length - tail.length; left > 0; left -= filler.length)
        yield left >= filler.length ? filler : filler.subarray(0, left);
      yield tail;
    }
    const loop = async () => {
      while (report.sent < HOARD_JOBS && !signal.aborted) {
        report.sent += 1;
        const got = await call('POST', `/v2/${target.hoardApp}/run`, {
          pieces,
          bytes: HOARD_BODY_BYTES,
        }).catch(noted('hoard run'));
        if (!got) {
          report.errors += 1;
          continue;
        }
        report.byStatus[got.status] = (report.byStatus[got.status] ?? 0) + 1;
        if (got.status !== 200) report.firstRefusal ??= `${got.status} ${got.head.slice(0, 300)}`;
      }
    };
    await Promise.all(Array.from({ length: HOARD_IN_FLIGHT }, loop));
    report.seconds = (performance.now() - started) / 1000;
    return report;
  };

  const stream = async (): Promise<NonNullable<AttackReport['stream']>> => {
    const job = await runAndWait(target.streamApp, { chunks: STREAM_CHUNKS, chunkBytes: STREAM_CHUNK_BYTES });
    const streamReads = emptyReads();
    for (let i = 0; job.jobId && i < STREAM_READS && !signal.aborted; i++) {
      const got = await call('GET', `/v2/${target.streamApp}/stream/${job.jobId}`).catch(
        noted('stream read'),
      );
      if (!got) break;
      count(streamReads, got);
      if (got.status !== 200 || /"stream":\[\]/.test(got.head)) break;
    }
    return { ...job, streamReads };
  };

  const item = <T>(n: number, run: () => Promise<T>) => (ITEMS.has(n) ? run() : Promise.resolve(undefined));
  const [answered, hoarded, streamed] = await Promise.all([item(3, answer), item(4, hoard), item(5, stream)]);
  return {
    ...(answered ? { answer: answered } : {}),
    ...(hoarded ? { hoard: hoarded } : {}),
    ...(streamed ? { stream: streamed } : {}),
    errors,
  };
}
