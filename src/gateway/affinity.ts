/**
 * Worker affinity (issue 35), as RunPod's load-balancing endpoints take it: a request naming a worker in
 * `X-Corral-Worker-Id` or `X-Runpod-Worker-Id` (the id an earlier answer named: worker-headers.ts) is sent to that
 * worker when it has a free slot, else to any (soft). RunPod's `strict <id>` and `strict-resume <id>` are parsed and
 * taken as soft for now: no wait for one worker, no wake of a frozen one, no `affinity_worker_gone`.
 */
import type { IncomingMessage } from 'node:http';

export type AffinityMode = 'soft' | 'strict' | 'strict-resume';

export interface Affinity {
  mode: AffinityMode;
  workerId: string;
}

const AFFINITY_HEADERS = ['x-corral-worker-id', 'x-runpod-worker-id'] as const;

/** A header's value as an affinity: `<id>`, `strict <id>` or `strict-resume <id>`; undefined when empty or malformed. */
export function parseAffinity(value: string | undefined): Affinity | undefined {
  const words = (value ?? '').trim().split(/\s+/);
  const [first = '', second, extra] = words;
  if (first === '' || extra !== undefined) return undefined;
  if (second === undefined) return { mode: 'soft', workerId: first };
  const mode = first.toLowerCase();
  return mode === 'strict' || mode === 'strict-resume' ? { mode, workerId: second } : undefined;
}

/** The affinity a request asks for: Corral's header first, then RunPod's. */
export function affinityOf(req: IncomingMessage): Affinity | undefined {
  for (const name of AFFINITY_HEADERS) {
    const value = req.headers[name];
    const affinity = parseAffinity(Array.isArray(value) ? value[0] : value);
    if (affinity) return affinity;
  }
  return undefined;
}

/** The worker the dispatcher should prefer for the request, if it names one. */
export function preferredWorker(req: IncomingMessage): string | undefined {
  return affinityOf(req)?.workerId;
}
