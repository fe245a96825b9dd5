/**
 * One worker as the local runtime keeps it in memory: what its state file says plus what this run knows (its
 * child process, its exit, who waits for that exit), and the RuntimeWorker the contract shows of it. Pure.
 */
import type { IdleTier } from '../idle-tiers.js';
import type { RuntimeWorker } from '../types.js';
import type { CpuSample } from './proc.js';
import type { StartedProcess } from './process-control.js';
import type { LocalState } from './state-dir.js';

export interface LocalWorker {
  state: LocalState;
  /** Set when this instance spawned it; adopted processes are polled instead. */
  child?: StartedProcess;
  exited: boolean;
  exitCode?: number;
  message: string;
  removing?: Promise<void>;
  exitWaiters: Set<() => void>;
  cpuSample?: CpuSample;
  /** Its idle tier (local-tiers.ts): its process group stopped, and its GPU state checkpointed when suspended. */
  tier?: IdleTier;
}

export const UNWATCHED_EXIT = 'the process ended while Corral was not watching (exit code unknown)';

/** A worker this instance has just started. */
export function startedRecord(state: LocalState, child: StartedProcess): LocalWorker {
  return { state, child, exited: false, message: 'running', exitWaiters: new Set() };
}

/**
 * A worker found in a state file left by an earlier run: exited as recorded, exited unseen when its process is no
 * longer ours (`alive` false; the state then records that too, so that it can be written back), else adopted.
 */
export function adoptedRecord(state: LocalState, alive: boolean): LocalWorker {
  if (state.exitCode !== undefined) {
    const message = state.message ?? `exited with code ${state.exitCode}`;
    return { state, exited: true, exitCode: state.exitCode, message, exitWaiters: new Set() };
  }
  if (!alive) {
    const ended = { ...state, exitCode: -1, message: UNWATCHED_EXIT };
    return { state: ended, exited: true, exitCode: -1, message: UNWATCHED_EXIT, exitWaiters: new Set() };
  }
  return { state, exited: false, message: 'running (adopted)', exitWaiters: new Set() };
}

export function toRuntimeWorker(record: LocalWorker): RuntimeWorker {
  const { state } = record;
  return {
    workerId: state.workerId,
    endpointId: state.endpointId,
    revision: state.revision,
    labels: { ...state.labels },
    phase: record.exited ? 'exited' : 'running',
    address: { host: '127.0.0.1', port: state.port },
    ...(record.exitCode !== undefined ? { exitCode: record.exitCode } : {}),
    message: record.message,
    createdAt: state.createdAt,
    gpuUuids: [...state.gpuUuids],
    ...(record.tier && !record.exited ? { tier: record.tier } : {}),
    ...(record.tier === 'suspended' && !record.exited && state.suspendedGpuBytes
      ? { suspendedGpuBytes: { ...state.suspendedGpuBytes } }
      : {}),
  };
}
