/**
 * Each endpoint's image as the controller prepares it before any worker needs it (pure): when to pull (created, a
 * new image, a failure due for its retry, an owner's change), what a finished pull makes of the state, and how the
 * endpoint's reported status reads while the image is pulled or cannot be had. image-preparer.ts does the I/O.
 */
import type { Endpoint, EndpointState, StateReport } from '../../domain/endpoint.js';
import type { RuntimeErrorCode } from '../../runtime/types.js';
import { type BackoffPolicy, backoffDelay } from '../crashes/backoff.js';
import { isActive, type ManagedWorker } from './managed-worker.js';

/**
 * `pulling`: under way; `ready`: present (and the owner may run it); `failed`: it cannot be had (IMAGE_PULL_FAILED:
 * not found, access denied, no registry answered), the endpoint is failed until a retry succeeds; `retrying`: the
 * runtime could not be asked (engine unreachable, an engine error), which is not the endpoint's failure.
 */
export type ImagePhase = 'pulling' | 'ready' | 'failed' | 'retrying';

export interface ImageState {
  /** What was prepared: the owner, the credentials and the reference (imageKey). */
  key: string;
  image: string;
  phase: ImagePhase;
  /** failed / retrying: the runtime's reason. */
  message: string;
  /** failed / retrying: the runtime error's code, which a worker start waiting for the image fails with. */
  code: RuntimeErrorCode | '';
  /** Failed tries in a row. */
  failures: number;
  /** failed / retrying: no new try before this time (but on an owner's change). */
  retryAt: number;
  /** The endpoint's updatedAt when this try began: an owner's change gives a failed image a new try at once. */
  updatedAt: number;
}

/**
 * Whose image, under which credentials, pulled how and where (the pull policy, and the products: a runtime whose
 * scheduler places workers pulls onto their nodes): two endpoints with the same key share one pull.
 */
export function imageKey(endpoint: Pick<Endpoint, 'ownerId' | 'spec'>): string {
  const { ref, authId, pullPolicy } = endpoint.spec.image;
  const products = [...endpoint.spec.productIds].sort().join(',');
  return [endpoint.ownerId, authId, ref, pullPolicy ?? '', products].join('\0');
}

/** Whether to begin preparing the endpoint's image now. */
export function shouldPrepare(endpoint: Endpoint, state: ImageState | undefined, now: number): boolean {
  if (endpoint.desired === 'stopped') return false;
  if (!state || state.key !== imageKey(endpoint)) return true;
  if (state.phase === 'pulling' || state.phase === 'ready') return false;
  return state.updatedAt !== endpoint.updatedAt || now >= state.retryAt;
}

/** A try begins; the failures of earlier tries of the same image are kept for the backoff. */
export function pullStarted(endpoint: Endpoint, previous: ImageState | undefined): ImageState {
  const key = imageKey(endpoint);
  return {
    key,
    image: endpoint.spec.image.ref,
    phase: 'pulling',
    message: '',
    code: '',
    failures: previous?.key === key ? previous.failures : 0,
    retryAt: 0,
    updatedAt: endpoint.updatedAt,
  };
}

export type PullOutcome = { ok: true } | { ok: false; code: RuntimeErrorCode; message: string };

/** The state after a try: ready, or failed / retrying with the backoff of a failed start. */
export function pullEnded(
  state: ImageState,
  outcome: PullOutcome,
  now: number,
  policy: BackoffPolicy,
): ImageState {
  if (outcome.ok) return { ...state, phase: 'ready', message: '', code: '', failures: 0, retryAt: 0 };
  const failures = state.failures + 1;
  return {
    ...state,
    phase: outcome.code === 'IMAGE_PULL_FAILED' ? 'failed' : 'retrying',
    message: outcome.message,
    code: outcome.code,
    failures,
    retryAt: now + backoffDelay(failures, policy),
  };
}

/**
 * The endpoint's status with its image: `failed (IMAGE_PULL_FAILED)` with the runtime's reason while the image
 * cannot be had (serving meanwhile, if old workers still do); while it is pulled, the pull's progress line, as
 * `deploying` when no worker serves. A stopped endpoint, one that can never be placed and one failed otherwise
 * keep their own status.
 */
export function withImageStatus(
  status: StateReport<EndpointState>,
  image: (Pick<ImageState, 'phase' | 'message'> & { progress: string }) | undefined,
  workers: readonly ManagedWorker[],
): StateReport<EndpointState> {
  if (!image || image.phase === 'ready' || status.state === 'stopped') return status;
  if (status.state === 'failed' && status.error !== 'IMAGE_PULL_FAILED') return status;
  const serving = workers.filter((w) => isActive(w) && w.state === 'running' && w.healthy).length;
  if (image.phase === 'failed') {
    const meanwhile = serving > 0 ? `; serving meanwhile: ${serving} running` : '';
    return { state: 'failed', error: 'IMAGE_PULL_FAILED', message: `${image.message}${meanwhile}` };
  }
  if (status.state === 'failed') return status;
  const line = image.phase === 'pulling' ? image.progress : `${image.message}; trying again`;
  if (serving > 0) return { ...status, message: `${status.message}; ${line}` };
  return { state: 'deploying', error: '', message: line };
}
