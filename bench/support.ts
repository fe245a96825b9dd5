/** Shared by the benchmark suites: a loopback HTTP client, latency statistics and table printing. */
import { Agent, request } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { availableParallelism, cpus, loadavg, totalmem } from 'node:os';
import { performance } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

export interface HttpAnswer {
  status: number;
  body: string;
}

/**
 * A keep-alive client for one server on 127.0.0.1 with one request in flight at a time, so that each
 * sample is one request's latency and not a queue's.
 */
export class LoopbackClient {
  readonly #agent = new Agent({ keepAlive: true, maxSockets: 1 });
  readonly #port: number;

  constructor(port: number) {
    this.#port = port;
  }

  send(method: 'GET' | 'POST', path: string, options: { body?: string; token?: string } = {}) {
    return new Promise<HttpAnswer>((resolve, reject) => {
      const headers: Record<string, string | number> = {};
      if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
      if (options.body !== undefined) {
        headers['content-type'] = 'application/json';
        headers['content-length'] = Buffer.byteLength(options.body);
      }
      const req = request(
        { host: '127.0.0.1', port: this.#port, method, path, agent: this.#agent, headers },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }),
          );
          res.on('error', reject);
        },
      );
      req.setTimeout(10_000, () => req.destroy(new Error(`${method} ${path} took over 10 s`)));
      req.on('error', reject);
      req.end(options.body);
    });
  }

  close(): void {
    this.#agent.destroy();
  }
}

export interface Bounds {
  /** At most this many measured requests. */
  count: number;
  /** And stop early once the requests have taken this much time in all. */
  maxMs: number;
}

/**
 * One measured figure: a request sent again and again, one in flight, within its bounds. Figures are run
 * in interleaved rounds (see `interleave`) so that noise on the machine falls on all of them alike. A request is an
 * HTTP one by default; a suite measuring a call in the process (a store's query) gives its own answer type.
 */
export class Figure<Answer = HttpAnswer> {
  /** Milliseconds per request, in the order measured. */
  readonly ms: number[] = [];
  /** Answers that were not what the request expects (wrong status or shape). */
  failures = 0;
  firstFailure: string | undefined;
  /** True when the time bound stopped it before its count. */
  cut = false;
  #spentMs = 0;

  constructor(
    readonly label: string,
    readonly bounds: Bounds,
    readonly send: () => Promise<Answer>,
    /** Returns what is wrong with an answer; runs after the clock stops (it may parse the answer). */
    readonly check: (answer: Answer) => string | undefined,
  ) {}

  /** Sends up to `count` more requests, within what is left of the figure's count and time. */
  async run(count: number): Promise<void> {
    const answers: Answer[] = [];
    for (let i = 0; i < count && this.ms.length < this.bounds.count; i++) {
      if (this.#spentMs >= this.bounds.maxMs) {
        this.cut = true;
        break;
      }
      const start = performance.now();
      const answer = await this.send();
      const took = performance.now() - start;
      this.ms.push(took);
      this.#spentMs += took;
      answers.push(answer);
    }
    for (const answer of answers) {
      const problem = this.check(answer);
      if (problem !== undefined) {
        this.failures += 1;
        this.firstFailure ??= problem;
      }
    }
  }
}

/** Runs the figures round by round, each taking its share of requests per round. */
export async function interleave(
  figures: readonly Pick<Figure<unknown>, 'bounds' | 'run'>[],
  rounds: number,
): Promise<void> {
  for (let round = 0; round < rounds; round++) {
    for (const figure of figures) await figure.run(Math.ceil(figure.bounds.count / rounds));
  }
}

export interface Summary {
  n: number;
  p50: number;
  p99: number;
  mean: number;
  max: number;
}

/** Nearest-rank percentiles. */
export function summarize(ms: number[]): Summary {
  const sorted = [...ms].sort((a, b) => a - b);
  const rank = (p: number) =>
    sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] ?? NaN;
  const total = sorted.reduce((sum, v) => sum + v, 0);
  return {
    n: sorted.length,
    p50: rank(0.5),
    p99: rank(0.99),
    mean: total / sorted.length,
    max: sorted.at(-1) ?? NaN,
  };
}

export function formatMs(value: number): string {
  return Number.isNaN(value) ? '-' : value.toFixed(value < 10 ? 2 : 1);
}

/** One figure's row of a `['figure (ms)', 'n', 'p50', 'mean', 'max']` table. */
export function summaryRow(name: string, ms: number[]): string[] {
  const s = summarize(ms);
  return [name, String(s.n), formatMs(s.p50), formatMs(s.mean), formatMs(s.max)];
}

export function formatRatio(value: number): string {
  return Number.isFinite(value) ? `${value.toFixed(1)}x` : '-';
}

/** A plain-text table with right-aligned numeric columns. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('  ');
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

export function machineDescription(): string {
  const cpu = cpus()[0]?.model.trim() ?? 'unknown CPU';
  const memory = `${Math.round(totalmem() / 2 ** 30)} GiB`;
  return `${availableParallelism()} cores (${cpu}), ${memory} memory, Node ${process.version}, ${process.platform}/${process.arch}`;
}

/** The 1-minute load average: other work on the machine makes tail latencies noisy. */
export function loadAverage(): string {
  return loadavg()
    .map((v) => v.toFixed(2))
    .join(' ');
}

/** A port free on 127.0.0.1 now (asked of the kernel by listening on port 0). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createNetServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** A full collection, without starting node with --expose-gc. */
export function collectGarbage(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}
