/**
 * The controller's record of a worker, and how one is made: a new pending worker, or one adopted from what the
 * runtime lists after a restart; and the row the store keeps of it.
 */
import { randomString } from '../../crypto/api-keys.js';
import type { Endpoint } from '../../domain/endpoint.js';
import type { Worker, WorkerErrorCode, WorkerState } from '../../domain/worker.js';
import type { WakeReport } from '../../ports/routing-view.js';
import { isWaitingPhase, LABELS, type RuntimeWorker } from '../../runtime/types.js';
import type { NotFoundRun } from '../health/not-found-verdict.js';
import { WAITING_STATE } from '../runtime-wait.js';

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
  /** Why its last health probe failed ('' once one passes): HEALTH_TIMEOUT's message names it. */
  healthCause: string;
  /** Its last probes in a row that answered 404, if the last one did (health/not-found-verdict.ts). */
  notFound?: NotFoundRun;
  gpuUuids: string[];
  address: { host: string; port: number } | null;
  /** When the controller decided to have this worker. */
  createdAt: number;
  /** When its container started; the startup deadline counts from here. */
  startedAt: number | null;
  readyAt: number | null;
  /** Its runtime said that its engine was told to stop it (a `docker stop`/`restart`/`kill`): a start may follow. */
  engineStopSeen?: boolean;
  /** When its container exited after such a stop, until it starts again (container-changes.ts). */
  exitSeenAt?: number;
  /** Its container exited by itself (an event said so): out of routing until the pass declares it dead. */
  exitedUnlisted?: boolean;
  /** Since when it has been `unhealthy` (undefined in any other state): past the controller's limit it is replaced. */
  unhealthySince?: number;
  /**
   * The runtime has its worker, or a create of it is under way (set when it is placed, and on one adopted): a
   * `pending` worker so marked waits for the runtime's scheduler (kubernetes), not for Corral's placement, and has a
   * pod to remove.
   */
  inRuntime?: boolean;
  /** In an idle tier (frozen, suspended): since when; and the runtime call under way (tier-moves.ts), if any. */
  tierSince?: number;
  tierCall?: 'freeze' | 'thaw' | 'suspend' | 'restore';
  /** Suspended: the GPUs, and the GPU memory on each in bytes, that a restore needs free. */
  suspendedOn?: { gpuUuids: string[]; gpuBytes: Record<string, number> };
  /** Moved down (suspended or stopped) so that a worker of another endpoint gets its GPUs: whom for. */
  evictedFor?: string;
  /** How it last came into routing from a wake (the gateway's Server-Timing): its tier and phases. */
  wake?: WakeReport;
  /** When this process adopted it after a restart (its idle time counts from here, not from its container's start). */
  adoptedAt?: number;
  /** Pending and not placed because its owner's budget is spent (budget-holds.ts); its message says so. */
  budgetHeld?: true;
  /** When placement gave it GPUs and when its image was present (a cold start's phases). */
  placedAt?: number;
  pulledAt?: number;
  /** When it began waiting in `downloading` for its models, and when they were all here (a cold start's `model`). */
  downloadingAt?: number;
  downloadedAt?: number;
}

/** A worker resting in an idle tier, with no runtime call under way: one the plan may wake, move down or stop. */
export function isResting(worker: Pick<ManagedWorker, 'state' | 'tierCall'>): boolean {
  return (worker.state === 'frozen' || worker.state === 'suspended') && worker.tierCall === undefined;
}

/** States that count as capacity (present or on the way). */
export const ACTIVE_STATES: ReadonlySet<WorkerState> = new Set([
  'pending',
  'downloading',
  'pulling',
  'starting',
  'running',
  'unhealthy',
]);

/** A worker waiting for Corral's placement: pending, and not handed to the runtime yet. */
export function awaitsPlacement(worker: ManagedWorker): boolean {
  return worker.state === 'pending' && worker.inRuntime !== true;
}

/** A worker placement may start now: waiting for it, and not held by its owner's spent budget. */
export function isPlaceable(worker: ManagedWorker): boolean {
  return awaitsPlacement(worker) && worker.budgetHeld !== true;
}

/** Whether the worker has a container (or one being made) to remove: neither waiting for placement nor failed. */
export function hasContainer(worker: ManagedWorker): boolean {
  return !awaitsPlacement(worker) && worker.state !== 'failed' && worker.state !== 'downloading';
}

export function isActive(worker: ManagedWorker): boolean {
  return ACTIVE_STATES.has(worker.state);
}

/** States in which the worker has (or had) a running container. */
export function isStarted(state: WorkerState): boolean {
  return state === 'starting' || state === 'running' || state === 'unhealthy';
}

/** A worker the controller has just decided to have: it waits for placement. */
export function pendingRecord(endpoint: Endpoint, now: number): ManagedWorker {
  return {
    id: `${endpoint.id.slice(0, 8)}-${randomString(8, 'abcdefghijklmnopqrstuvwxyz0123456789')}`,
    endpointId: endpoint.id,
    ownerId: endpoint.ownerId,
    revision: endpoint.revision,
    state: 'pending',
    error: '',
    message: 'waiting for placement',
    healthy: false,
    healthCause: '',
    gpuUuids: [],
    address: null,
    createdAt: now,
    startedAt: null,
    readyAt: null,
  };
}

/**
 * A worker found by label after a restart: starting (its health is learnt again), failed if it had exited, or, not
 * running yet (no address), in the state and words of the runtime's waiting phase (a pod the scheduler has no room
 * for is `pending` with its message), followed at each pass (runtime-wait.ts). The startup deadline of one pending
 * or pulling counts from when it runs.
 */
export function adoptedRecord(
  container: RuntimeWorker,
  endpoint: Endpoint | undefined,
  now: number,
): ManagedWorker {
  const exited = container.phase === 'exited';
  if (!exited && container.tier) return adoptedInTier(container, container.tier, now);
  const waiting =
    !exited && !container.address && isWaitingPhase(container.phase) ? container.phase : undefined;
  return {
    id: container.workerId,
    endpointId: container.endpointId,
    ownerId: container.labels[LABELS.owner] ?? endpoint?.ownerId ?? '',
    revision: container.revision,
    state: exited ? 'failed' : waiting ? WAITING_STATE[waiting] : 'starting',
    error: exited ? 'RUNTIME_ERROR' : '',
    message: exited
      ? `exited with code ${container.exitCode ?? 'unknown'}`
      : waiting && container.message !== ''
        ? container.message
        : 'adopted after a restart',
    healthy: false,
    healthCause: '',
    // What the runtime kept with the worker: placement must count these GPUs as held from the first pass.
    gpuUuids: [...container.gpuUuids],
    address: container.address ?? null,
    createdAt: container.createdAt,
    startedAt: waiting === 'pending' || waiting === 'pulling' ? null : now,
    readyAt: null,
    inRuntime: !exited,
    adoptedAt: now,
  };
}

/**
 * A worker found in an idle tier after a restart (a paused container, a process the driver holds checkpointed):
 * kept in its tier from now, its keep time counted afresh. A suspended one holds no GPU; its GPUs are those it
 * restores onto, with the GPU memory the runtime recorded at its suspend (counted against the suspended memory
 * budget); where none was recorded, `gpuBytes` is empty.
 */
function adoptedInTier(container: RuntimeWorker, tier: 'frozen' | 'suspended', now: number): ManagedWorker {
  const gpuUuids = [...container.gpuUuids];
  return {
    id: container.workerId,
    endpointId: container.endpointId,
    ownerId: container.labels[LABELS.owner] ?? '',
    revision: container.revision,
    state: tier,
    error: '',
    message: `${tier} since ${new Date(now).toISOString().slice(0, 19)}Z (adopted after a restart${recordedGpuState(container)})`,
    healthy: false,
    healthCause: '',
    gpuUuids: tier === 'frozen' ? gpuUuids : [],
    ...(tier === 'suspended'
      ? { suspendedOn: { gpuUuids, gpuBytes: { ...(container.suspendedGpuBytes ?? {}) } } }
      : {}),
    address: container.address ?? null,
    createdAt: container.createdAt,
    startedAt: now,
    readyAt: null,
    inRuntime: true,
    tierSince: now,
    adoptedAt: now,
  };
}

/** `; its GPU state 4.29 GB` where the runtime recorded a suspended worker's GPU memory, else nothing. */
function recordedGpuState(container: RuntimeWorker): string {
  if (container.tier !== 'suspended' || !container.suspendedGpuBytes) return '';
  const bytes = Object.values(container.suspendedGpuBytes).reduce((a, b) => a + b, 0);
  return `; its GPU state ${(bytes / 1e9).toFixed(2)} GB`;
}

/** The store's row of a worker. */
export function toWorker(record: ManagedWorker, now: number): Worker {
  return {
    id: record.id,
    endpointId: record.endpointId,
    ownerId: record.ownerId,
    revision: record.revision,
    status: { state: record.state, error: record.error, message: record.message },
    healthy: record.healthy,
    gpuUuids: record.gpuUuids,
    address: record.address,
    createdAt: record.createdAt,
    updatedAt: now,
    readyAt: record.readyAt,
  };
}
