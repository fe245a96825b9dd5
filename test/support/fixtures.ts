/**
 * Domain fixtures: the test limits, sample endpoints (unique ids), the controller's record of a worker, a queued
 * job, and deletion as the API does it.
 */
import type { ManagedWorker } from '../../src/controller/workers/managed-worker.js';
import type { Endpoint } from '../../src/domain/endpoint.js';
import { DEFAULT_JOB_POLICY, type NewJob } from '../../src/domain/job.js';
import { DEFAULT_LIMITS, type Limits } from '../../src/domain/limits.js';
import { applyPatch, defaultSpec, type SpecPatch } from '../../src/domain/spec-patch.js';
import type { WorkerState } from '../../src/domain/worker.js';
import type { Store } from '../../src/store/store.js';

export const TEST_LIMITS: Limits = { ...DEFAULT_LIMITS, cudaVersions: ['11.8', '12.1', '12.4'] };

/** A job as `run` submits it: input 1, no webhook, the default policy, owner `o` unless `over` says. */
export function sampleJob(id: string, endpointId: string, over: Partial<NewJob> = {}): NewJob {
  return {
    id,
    endpointId,
    ownerId: 'o',
    input: '1',
    webhook: null,
    policy: DEFAULT_JOB_POLICY,
    sync: false,
    createdAt: 0,
    ...over,
  };
}

let counter = 0;
let workerSeq = 0;

/** The controller's record of a worker in `state` (ids `w1`, `w2`... and createdAt in order of making). */
export function sampleWorker(state: WorkerState, extra: Partial<ManagedWorker> = {}): ManagedWorker {
  workerSeq += 1;
  return {
    id: `w${workerSeq}`,
    endpointId: 'e',
    ownerId: 'o',
    revision: 1,
    state,
    error: '',
    message: '',
    healthy: state === 'running',
    gpuUuids: [],
    address: null,
    createdAt: workerSeq,
    startedAt: state === 'pending' ? null : 0,
    readyAt: state === 'running' ? 1 : null,
    healthCause: '',
    ...extra,
  };
}

/** A valid endpoint for tests; ids and appNames are unique within a run. */
export function sampleEndpoint(options: { ownerId?: string; at?: number; patch?: SpecPatch } = {}): Endpoint {
  counter += 1;
  const id = `ep${String(counter).padStart(6, '0')}${Math.random().toString(36).slice(2, 8)}`;
  const at = options.at ?? 1_700_000_000_000 + counter;
  const spec = applyPatch(defaultSpec(id, TEST_LIMITS), {
    image: { ref: 'corral/test-worker:latest' },
    port: 8000,
    ...options.patch,
  });
  return {
    id,
    ownerId: options.ownerId ?? 'owner-a',
    spec,
    revision: 1,
    desired: 'running',
    status: { state: 'deploying', error: '', message: '' },
    createdAt: at,
    updatedAt: at,
  };
}

/** Writes a new endpoint to the store with an audit entry and no event (the caller pokes a controller if one runs). */
export async function storeEndpoint(store: Store, endpoint: Endpoint, at = 0): Promise<void> {
  await store.endpoints.create(endpoint, [], {
    at,
    ownerId: endpoint.ownerId,
    actor: 'test',
    action: 'endpoint.create',
    targetId: endpoint.id,
  });
}

/**
 * Deletes an endpoint through the store as `EndpointService.delete` writes it (a `deleted` event and an audit
 * entry); the caller pokes a controller if one runs, as the API does. False when it was not there.
 */
export async function deleteEndpoint(
  store: Store,
  endpoint: { ownerId: string; id: string },
  at: number = Date.now(),
): Promise<boolean> {
  const deleted = await store.endpoints.mutate(
    endpoint.ownerId,
    endpoint.id,
    (current) => ({
      next: { ...current, updatedAt: at },
      events: [{ at, type: 'deleted', message: 'endpoint deleted' }],
      deleted: true,
    }),
    () => ({
      at,
      ownerId: endpoint.ownerId,
      actor: 'test',
      action: 'endpoint.delete',
      targetId: endpoint.id,
    }),
  );
  return deleted !== undefined;
}

/** The key with its last character changed to another one (an x already there would be no change at all). */
export function withLastCharChanged(key: string): string {
  return `${key.slice(0, -1)}${key.endsWith('x') ? 'y' : 'x'}`;
}
