/**
 * A worker on its way to running, as its runtime says (pure): which state each waiting phase shows (`pending` while
 * the runtime's scheduler has no room, with its words; `pulling`; `starting`), and what a worker the runtime has but
 * no create of this process reports on (one adopted after a restart, its pod not running yet) becomes at a pass:
 * still waiting, in the runtime's state and words, or started at an address.
 */
import type { WorkerState } from '../domain/worker.js';
import { isWaitingPhase, type RuntimeWorker, type WaitingPhase } from '../runtime/types.js';
import type { ManagedWorker } from './managed-worker.js';

/** The worker state of each waiting phase of the runtime's. */
export const WAITING_STATE: Readonly<Record<WaitingPhase, WorkerState>> = {
  pending: 'pending',
  pulling: 'pulling',
  starting: 'starting',
};

/** The state a create's progress shows: its phase (`pulling` where the runtime says none). */
export function progressState(phase: WaitingPhase | undefined): WorkerState {
  return WAITING_STATE[phase ?? 'pulling'];
}

/**
 * Whether the controller follows the runtime's phase of this worker at each pass: the runtime has it, it has no
 * address yet and it waits. A create under way reports on its own worker (the caller leaves those out).
 */
export function followsRuntime(record: ManagedWorker): boolean {
  return (
    record.inRuntime === true &&
    record.address === null &&
    (record.state === 'pending' || record.state === 'pulling' || record.state === 'starting')
  );
}

export type Followed =
  | { type: 'waiting'; state: WorkerState; message: string }
  | { type: 'started'; address: { host: string; port: number } };

/**
 * What a followed worker becomes from its runtime worker as listed (an exited one is the caller's: it died):
 * started once it has an address, else the state and words of its waiting phase; undefined when nothing changed.
 */
export function followed(record: ManagedWorker, container: RuntimeWorker): Followed | undefined {
  if (container.phase === 'exited') return undefined;
  if (container.address) return { type: 'started', address: { ...container.address } };
  if (!isWaitingPhase(container.phase)) return undefined;
  const state = WAITING_STATE[container.phase];
  const message = container.message;
  return state === record.state && message === record.message
    ? undefined
    : { type: 'waiting', state, message };
}
