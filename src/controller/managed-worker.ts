import type { WorkerErrorCode, WorkerState } from '../domain/worker.js';

/** The controller's record of a worker: its container (if any) plus what health checks found. */
export interface ManagedWorker {
  id: string;
  endpointId: string;
  ownerId: string;
  revision: number;
  state: WorkerState;
  error: WorkerErrorCode | '';
  message: string;
  healthy: boolean;
  gpuUuids: string[];
  address: { host: string; port: number } | null;
  /** When the controller decided to have this worker. */
  createdAt: number;
  /** When its container started; the startup deadline counts from here. */
  startedAt: number | null;
  readyAt: number | null;
}

/** States that count as capacity (present or on the way). */
export const ACTIVE_STATES: ReadonlySet<WorkerState> = new Set([
  'pending',
  'pulling',
  'starting',
  'running',
  'unhealthy',
]);

export function isActive(worker: ManagedWorker): boolean {
  return ACTIVE_STATES.has(worker.state);
}
