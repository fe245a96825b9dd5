/**
 * Tenant B's calls while nothing or tenant A's attack runs: `GET /healthz` on the API and a gateway call to its own
 * small endpoint (`GET /e/{app}/work?ms=0` with its key, the test worker answering at once), in turn, one request in
 * flight on a keep-alive connection each, at most one every B_INTERVAL_MS (the wait is not measured), until both
 * counts are reached, the time bound passes or `until` says to stop. A request with no answer within the client's
 * 10 s is a failure, and its sample is the time it waited.
 */
import { formatMs, type LoopbackClient, type Summary, summarize } from '../support.js';
import { B_INTERVAL_MS } from './settings.js';

export interface TenantB {
  api: LoopbackClient;
  gateway: LoopbackClient;
  token: string;
  app: string;
}

export interface CallFigures {
  summary: Summary;
  failures: number;
  firstFailure?: string;
  /** The slowest samples and when they were sent, in seconds since the phase began. */
  slowest: { ms: number; at: number }[];
}

export interface PhaseFigures {
  healthz: CallFigures;
  gateway: CallFigures;
  seconds: number;
}

interface Call {
  send: () => Promise<{ status: number; body: string }>;
  ok: (answer: { status: number; body: string }) => boolean;
  ms: number[];
  at: number[];
  failures: number;
  firstFailure?: string;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export async function measureTenantB(
  b: TenantB,
  bounds: { count: number; maxMs: number },
  until: () => boolean = () => false,
): Promise<PhaseFigures> {
  const call = (send: Call['send'], ok: Call['ok']): Call => ({ send, ok, ms: [], at: [], failures: 0 });
  const healthz = call(
    () => b.api.send('GET', '/healthz'),
    (a) => a.status === 200 && a.body.includes('"ok"'),
  );
  const gateway = call(
    () => b.gateway.send('GET', `/e/${b.app}/work?ms=0`, { token: b.token }),
    (a) => a.status === 200 && a.body.includes('"inFlight"'),
  );
  const started = performance.now();
  let sentAt = 0;
  let turn = 0;
  while (performance.now() - started < bounds.maxMs && !until()) {
    const c = turn++ % 2 === 0 ? healthz : gateway;
    if (c.ms.length >= bounds.count) {
      if (healthz.ms.length >= bounds.count && gateway.ms.length >= bounds.count) break;
      continue;
    }
    const wait = sentAt + B_INTERVAL_MS - performance.now();
    if (wait > 0) await sleep(wait);
    sentAt = performance.now();
    let problem: string | undefined;
    try {
      const answer = await c.send();
      if (!c.ok(answer)) problem = `${answer.status} ${answer.body.slice(0, 200)}`;
    } catch (error) {
      problem = error instanceof Error ? error.message : String(error);
    }
    c.ms.push(performance.now() - sentAt);
    c.at.push((sentAt - started) / 1000);
    if (problem !== undefined) {
      c.failures += 1;
      c.firstFailure ??= problem;
    }
  }
  return {
    healthz: figuresOf(healthz),
    gateway: figuresOf(gateway),
    seconds: (performance.now() - started) / 1000,
  };
}

function figuresOf(c: Call): CallFigures {
  const slowest = c.ms
    .map((ms, i) => ({ ms, at: c.at[i] ?? Number.NaN }))
    .sort((x, y) => y.ms - x.ms)
    .slice(0, 5);
  return {
    summary: summarize(c.ms),
    failures: c.failures,
    ...(c.firstFailure === undefined ? {} : { firstFailure: c.firstFailure }),
    slowest,
  };
}

/** `12.3 ms at 4.5 s, ...`: where in a phase its slowest requests fell. */
export function describeSlowest(f: CallFigures): string {
  return f.slowest.map((s) => `${formatMs(s.ms)} ms at ${s.at.toFixed(1)} s`).join(', ');
}
