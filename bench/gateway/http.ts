/** The loopback HTTP helpers of the gateway suite: a free port, one GET, polling until something holds. */
import type { ChildProcess } from 'node:child_process';
import { Agent, type IncomingHttpHeaders, request, type Server } from 'node:http';
import { performance } from 'node:perf_hooks';
import { BENCH_AUTHORIZATION, STEP_MAX_MS } from './settings.js';

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export function listenLoopback(server: Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      resolve(typeof address === 'object' && address ? address.port : 0);
    });
  });
}

export interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

export function httpGet(
  port: number,
  path: string,
  options: { host?: string; agent?: Agent | false; timeoutMs?: number } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { authorization: BENCH_AUTHORIZATION };
    if (options.host !== undefined) headers.host = options.host;
    const req = request(
      { host: '127.0.0.1', port, path, method: 'GET', headers, agent: options.agent ?? false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString(),
          }),
        );
        res.on('error', reject);
      },
    );
    req.setTimeout(options.timeoutMs ?? STEP_MAX_MS, () => req.destroy(new Error(`GET ${path} timed out`)));
    req.on('error', reject);
    req.end();
  });
}

/** Polls `check` every `intervalMs` until it returns a value, for at most `maxMs`. */
export async function waitFor<T>(
  what: string,
  check: () => T | undefined | Promise<T | undefined>,
  options: { intervalMs?: number; maxMs?: number } = {},
): Promise<T> {
  const deadline = performance.now() + (options.maxMs ?? STEP_MAX_MS);
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (performance.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await sleep(options.intervalMs ?? 5);
  }
}

/** ms from `start` (performance.now()) until GET /health answers 200, polled every `intervalMs`. */
export async function pollHealthy(port: number, start: number, intervalMs: number, child?: ChildProcess) {
  const agent = new Agent({ keepAlive: false });
  try {
    for (;;) {
      if (child && (child.exitCode !== null || child.signalCode !== null)) {
        throw new Error(`the worker exited (${child.exitCode ?? child.signalCode}) before it was healthy`);
      }
      const ok = await httpGet(port, '/health', { agent, timeoutMs: 1_000 }).then(
        (a) => a.status === 200,
        () => false,
      );
      if (ok) return performance.now() - start;
      if (performance.now() - start > STEP_MAX_MS) throw new Error(`no healthy answer on port ${port}`);
      await sleep(intervalMs);
    }
  } finally {
    agent.destroy();
  }
}
