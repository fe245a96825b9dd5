/**
 * What one health probe found, and the cause a failing one names in the worker's message and the endpoint's log
 * ("connection refused on port 8000", "HTTP 404 from /health", "no answer from /health within 2 s"). Pure;
 * http-probe.ts turns an HTTP GET into a ProbeResult.
 */

/**
 * One probe's outcome: an HTTP answer (it passes below 400), no answer in time, or a connection error; or, where the
 * default health path answered 404, `/`'s answer in its place (it passes below 500: the app serves).
 */
export type ProbeResult =
  | { kind: 'answered'; status: number }
  | { kind: 'root'; status: number }
  | { kind: 'timeout' }
  /** `code`: Node's error code (ECONNREFUSED, ECONNRESET, HPE_...), or '' when it has none. */
  | { kind: 'error'; code: string; message: string };

/** A 2xx or 3xx answer passes; in the root fallback, any answer below 500. */
export function probePassed(result: ProbeResult): boolean {
  if (result.kind === 'root') return result.status < 500;
  return result.kind === 'answered' && result.status < 400;
}

/** The app answered, but not on the path asked: what the root fallback and the 404 verdict start from. */
export function isNotFound(result: ProbeResult): boolean {
  return result.kind === 'answered' && result.status === 404;
}

/** An answer with this status: for probes that know it without a request (tests, benchmarks). */
export function answered(status: number): ProbeResult {
  return { kind: 'answered', status };
}

export interface ProbeContext {
  /** The health path probed. */
  path: string;
  /** The port the app was told to listen on (its PORT), which is what the owner can fix. */
  port: number;
  timeoutMs: number;
}

/** Why the probe failed, for people; undefined when it passed. */
export function probeFailureCause(result: ProbeResult, context: ProbeContext): string | undefined {
  const { path, port } = context;
  switch (result.kind) {
    case 'answered':
      return result.status < 400 ? undefined : `HTTP ${result.status} from ${path}`;
    case 'root':
      return result.status < 500 ? undefined : `HTTP 404 from ${path}, HTTP ${result.status} from /`;
    case 'timeout':
      return `no answer from ${path} within ${seconds(context.timeoutMs)}`;
    case 'error':
      return connectionCause(result, port, context.timeoutMs);
  }
}

function connectionCause(result: { code: string; message: string }, port: number, timeoutMs: number): string {
  switch (result.code) {
    case 'ECONNREFUSED':
      return `connection refused on port ${port}`;
    // What Docker's port proxy does when nothing listens on the worker's port: it accepts, then closes.
    case 'ECONNRESET':
    case 'EPIPE':
      return `connection closed on port ${port} before any answer`;
    case 'ETIMEDOUT':
      return `no connection on port ${port} within ${seconds(timeoutMs)}`;
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return `worker unreachable (${result.code}) on port ${port}`;
  }
  if (result.code.startsWith('HPE_')) return `no valid HTTP answer on port ${port} (${result.code})`;
  const detail = result.code === '' ? result.message : `${result.code}: ${result.message}`;
  return `probe on port ${port} failed: ${detail}`;
}

/** 2000 -> "2 s", 500 -> "0.5 s". */
function seconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(3))} s`;
}

/** A queue worker's health as its contacts say it (the jobs side's verdict: it polled, or how long it is silent). */
export interface QueueWorkerContacts {
  healthy: boolean;
  reason?: 'never-polled' | 'silent';
  silentMs?: number;
}

/** A queue worker's probe: its contacts' verdict as a ProbeResult (a queue worker serves no health path). */
export function queueProbeResult(contacts: QueueWorkerContacts): ProbeResult {
  if (contacts.healthy) return { kind: 'answered', status: 200 };
  return contacts.reason === 'never-polled'
    ? { kind: 'error', code: 'NO_POLL', message: 'the worker has not polled for a job yet' }
    : {
        kind: 'error',
        code: 'NO_PING',
        message: `no poll or ping from the worker for ${Math.round((contacts.silentMs ?? 0) / 1000)} s`,
      };
}
