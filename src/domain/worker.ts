/** The domain's worker: its states, its stable failure codes, and which workers go first when scaling down. */
import type { StateReport } from './endpoint.js';

export const WORKER_STATES = [
  'pending',
  'pulling',
  'starting',
  'running',
  'unhealthy',
  'draining',
  'stopped',
  'failed',
  // Last, so that the order of those before is kept where it is stored (the history's rows: history-codec.ts).
  'frozen',
  'suspended',
  // Its endpoint's models are fetched into the machine's cache before it is placed on a GPU (issue 34).
  'downloading',
] as const;

export type WorkerState = (typeof WORKER_STATES)[number];

/** Whether the worker is in an idle tier (its container present, stopped). */
export function isInTier(state: WorkerState): boolean {
  return state === 'frozen' || state === 'suspended';
}

/** Stable codes in a failed worker's `error`. */
export type WorkerErrorCode =
  | 'IMAGE_PULL_FAILED'
  | 'CRASH_LOOP'
  | 'HEALTH_TIMEOUT'
  | 'UNHEALTHY'
  | 'INSUFFICIENT_GPU'
  | 'RUNTIME_ERROR'
  | 'MODEL_DOWNLOAD_FAILED';

/** A worker as the controller reports it (the API shows this; the runtime knows only containers). */
export interface Worker {
  id: string;
  endpointId: string;
  ownerId: string;
  revision: number;
  status: StateReport<WorkerState>;
  /** The health prober's verdict. */
  healthy: boolean;
  gpuUuids: string[];
  /** Where the worker's port is reachable (the gateway routes here). */
  address: { host: string; port: number } | null;
  createdAt: number;
  updatedAt: number;
  /** When it first passed its health check; null until then. */
  readyAt: number | null;
  /** Its owner drained it (`POST endpoint/worker/drain`); as the store holds it, so absent in the controller's writes. */
  drainRequested?: boolean;
}

/** Which workers go first when scaling down: those not serving yet, then the serving ones. */
export const SCALE_DOWN_RANK: Record<WorkerState, number> = {
  pending: 0,
  downloading: 0,
  pulling: 1,
  starting: 2,
  unhealthy: 3,
  running: 4,
  frozen: 5,
  suspended: 5,
  draining: 5,
  stopped: 5,
  failed: 5,
};
