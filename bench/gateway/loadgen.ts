/**
 * The open-loop load generator of the latency figure: a child process of its own (role `loadgen`, so that its
 * work is not charged to any proxy) sending one request every 1000/rate ms whatever the answers, over keep-alive
 * connections, to every target in turn.
 */
import { Agent, request } from 'node:http';
import { performance } from 'node:perf_hooks';
import { forkRole, LOADGEN_ENV } from './processes.js';
import { BENCH_AUTHORIZATION, STEP_MAX_MS, WRK_CONNECTIONS } from './settings.js';

export interface LoadgenTarget {
  name: string;
  port: number;
  host?: string;
}

export interface LoadgenParams {
  targets: LoadgenTarget[];
  path: string;
  rate: number;
  warmupMs: number;
  sliceMs: number;
  slices: number;
}

export interface LoadgenResult {
  /** From the moment each request was sent to the end of its answer. */
  serviceMs: number[];
  /** From the moment each request was due (corrects for a late send: coordinated omission). */
  fromDueMs: number[];
  errors: number;
  firstError?: string;
  /** The latest a request was sent after it was due. */
  maxSendLagMs: number;
}

/** One load generator process for every path, so that all paths share its warm-up and its noise. */
export function runLoadgen(params: LoadgenParams): Promise<Record<string, LoadgenResult[]>> {
  return new Promise((resolve, reject) => {
    const child = forkRole('loadgen', { [LOADGEN_ENV]: JSON.stringify(params) });
    let result: Record<string, LoadgenResult[]> | undefined;
    const plannedMs = params.targets.length * (params.warmupMs + params.sliceMs * params.slices);
    const timer = setTimeout(() => child.kill('SIGKILL'), plannedMs + STEP_MAX_MS + 30_000);
    child.on('message', (message: { type?: string; result?: Record<string, LoadgenResult[]> }) => {
      if (message.type === 'result') result = message.result;
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      if (result) resolve(result);
      else reject(new Error(`the load generator exited with ${code} and no result`));
    });
  });
}

/**
 * Runs in the child: an open-loop client, one request every 1000/rate ms whatever the answers. Each target is
 * warmed up, then the targets take turns in slices of `sliceMs` (direct, gateway, nginx, direct, ...), so that a
 * burst of other work on the machine falls on all of them alike.
 */
export async function loadgenChild(): Promise<void> {
  const params = JSON.parse(process.env[LOADGEN_ENV] ?? '{}') as LoadgenParams;
  const agent = new Agent({ keepAlive: true, maxSockets: WRK_CONNECTIONS });
  const result: Record<string, LoadgenResult[]> = {};
  for (const target of params.targets) {
    await openLoop(target, params, params.warmupMs, agent);
    result[target.name] = [];
  }
  for (let slice = 0; slice < params.slices; slice++) {
    for (const target of params.targets) {
      result[target.name]?.push(await openLoop(target, params, params.sliceMs, agent));
    }
  }
  agent.destroy();
  process.send?.({ type: 'result', result }, () => process.disconnect());
}

function openLoop(
  target: LoadgenTarget,
  params: LoadgenParams,
  durationMs: number,
  agent: Agent,
): Promise<LoadgenResult> {
  const intervalMs = 1000 / params.rate;
  const total = Math.round((params.rate * durationMs) / 1000);
  const headers: Record<string, string> = { authorization: BENCH_AUTHORIZATION };
  if (target.host) headers.host = target.host;
  const result: LoadgenResult = { serviceMs: [], fromDueMs: [], errors: 0, maxSendLagMs: 0 };
  return new Promise((resolve) => {
    if (total === 0) {
      resolve(result);
      return;
    }
    let sent = 0;
    let finished = 0;
    const start = performance.now() + 5;
    const done = () => {
      finished += 1;
      if (finished === total) resolve(result);
    };
    const fail = (message: string) => {
      result.errors += 1;
      result.firstError ??= message;
      done();
    };
    const fire = (due: number) => {
      const sentAt = performance.now();
      result.maxSendLagMs = Math.max(result.maxSendLagMs, sentAt - due);
      let settled = false;
      const req = request(
        { host: '127.0.0.1', port: target.port, path: params.path, method: 'GET', headers, agent },
        (res) => {
          res.resume();
          res.on('end', () => {
            if (settled) return;
            settled = true;
            const end = performance.now();
            if (res.statusCode !== 200) {
              fail(`status ${res.statusCode}`);
              return;
            }
            result.serviceMs.push(end - sentAt);
            result.fromDueMs.push(end - due);
            done();
          });
        },
      );
      req.setTimeout(10_000, () => req.destroy(new Error('no answer in 10 s')));
      req.on('error', (error) => {
        if (settled) return;
        settled = true;
        fail(error.message);
      });
      req.end();
    };
    const tick = () => {
      const now = performance.now();
      while (sent < total && start + sent * intervalMs <= now) {
        fire(start + sent * intervalMs);
        sent += 1;
      }
      if (sent < total) setTimeout(tick, Math.max(0, start + sent * intervalMs - performance.now()));
    };
    setTimeout(tick, 5);
  });
}
