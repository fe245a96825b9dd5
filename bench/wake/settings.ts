/**
 * The wake suite's counts, targets and its one HTTP call (a new connection each, as a woken worker's first is), with
 * the wait for a started worker's first answer.
 */
import { request } from 'node:http';

/** Interleaved rounds: warm, thaw and cold once each per round, so that noise falls on all three alike. */
export const DOCKER_ROUNDS = 10;
/** How long a worker stays paused before its thaw is timed (so that it really is frozen). */
export const PAUSED_MS = 300;
/** Issue 24's target: the first answer after a thaw, minus a warm answer. */
export const THAW_TARGET_MS = 50;
export const GPU_ROUNDS = 3;
/** GB of GPU memory the GPU part's process holds. */
export const GPU_HOLD_GB = 2;
/** Issue 24's target: restore plus the first answer within this factor of the driver's own restore. */
export const RESTORE_TARGET_RATIO = 1.2;

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** GET on a new connection; resolves with the status and body. */
export function getOnce(
  port: number,
  path: string,
  timeoutMs = 120_000,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
      res.on('error', reject);
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`GET ${path} took over ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}

/** Waits until the worker on `port` answers /health (a started one: up to 30 s). */
export async function waitAnswering(port: number): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if ((await getOnce(port, '/health', 2_000).catch(() => undefined))?.status === 200) return;
    await sleep(50);
  }
  throw new Error('the worker never answered /health');
}
