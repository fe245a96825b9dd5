/**
 * The worker lifecycle as a table (pure): every worker state, the states it may move to, and what being in it means
 * for routing, the GPU ledger, health probing and the store. `transition` checks one move and says its effects;
 * worker-lifecycle.ts performs moves through it. A new state (say `frozen`) is one entry here, the runtime calls
 * that enter and leave it, and tests.
 */
import { WORKER_STATES, type WorkerState } from '../../domain/worker.js';

/** What being in a state means. */
export interface StateMeaning {
  /** The gateway may route to it (when its last probe passed and it has an address). */
  routable: boolean;
  /** Its record's GPUs count as held by it; a failed worker's go to its container's removal (gpu-ledger.ts). */
  holdsGpus: boolean;
  /** The health prober probes it. */
  probed: boolean;
  /** Its store row is written at the end of the pass (forgetting a worker deletes its row). */
  written: boolean;
}

export interface StateEntry extends StateMeaning {
  /** The states it may move to. Staying in a state (a new message) is always allowed. */
  to: readonly WorkerState[];
}

export const LIFECYCLE: Readonly<Record<WorkerState, StateEntry>> = {
  // Waiting for placement, or (inRuntime) for the runtime's scheduler.
  pending: {
    to: ['downloading', 'pulling', 'starting', 'draining', 'failed'],
    routable: false,
    holdsGpus: false,
    probed: false,
    written: true,
  },
  // Its endpoint's models are fetched into the machine's cache; it holds no GPU meanwhile, and is placed (pending
  // again) once they are all there. It has no container: a removal forgets it.
  downloading: {
    to: ['pending', 'draining', 'failed'],
    routable: false,
    holdsGpus: false,
    probed: false,
    written: true,
  },
  // Placed: its image is pulled, its container created (the runtime may say its scheduler waits: pending again).
  pulling: {
    to: ['pending', 'starting', 'draining', 'failed'],
    routable: false,
    holdsGpus: true,
    probed: false,
    written: true,
  },
  // Its container runs; probed until it answers. A followed pod may go back to a waiting phase.
  starting: {
    to: ['pending', 'pulling', 'running', 'unhealthy', 'draining', 'failed'],
    routable: false,
    holdsGpus: true,
    probed: true,
    written: true,
  },
  running: {
    to: ['unhealthy', 'frozen', 'draining', 'failed'],
    routable: true,
    holdsGpus: true,
    probed: true,
    written: true,
  },
  unhealthy: {
    to: ['running', 'draining', 'failed'],
    routable: false,
    holdsGpus: true,
    probed: true,
    written: true,
  },
  // Idle past freeTimeout (keepFrozen > 0): every process stopped, its GPUs and memory kept; neither routed nor
  // probed, so never counted unhealthy. A thaw puts it back running at once; a restore passes through here (its
  // GPUs claimed again) on its way from suspended to running.
  frozen: {
    to: ['running', 'suspended', 'draining', 'failed'],
    routable: false,
    holdsGpus: true,
    probed: false,
    written: true,
  },
  // Frozen, and its GPU state in host memory (the driver's checkpoint): it holds no GPU; its record keeps the
  // GPUs and GPU memory it needs to be restored (`suspendedOn`). A restore makes it frozen again, then running.
  suspended: {
    to: ['frozen', 'draining', 'failed'],
    routable: false,
    holdsGpus: false,
    probed: false,
    written: true,
  },
  // In-flight requests finish; an owner's undrain puts it back (running, or starting if it was not serving).
  draining: {
    to: ['stopped', 'running', 'starting', 'failed'],
    routable: false,
    holdsGpus: true,
    probed: false,
    written: true,
  },
  // Drained; its container is being removed, then the record goes. A failed removal fails it.
  stopped: {
    to: ['failed'],
    routable: false,
    holdsGpus: true,
    probed: false,
    written: true,
  },
  // Kept (the newest few) so that the API shows why; it leaves only by being forgotten.
  failed: {
    to: [],
    routable: false,
    holdsGpus: false,
    probed: false,
    written: true,
  },
};

/** How a move changes one concern. */
export type Change = 'enters' | 'leaves' | 'unchanged';

export interface TransitionEffects {
  routing: Change;
  gpus: Change;
  probing: Change;
  /** Every move (and every new message) is written to the store at the end of the pass. */
  store: 'write';
}

export type Transition =
  | { allowed: true; effects: TransitionEffects }
  | { allowed: false; from: WorkerState; to: WorkerState };

function change(before: boolean, after: boolean): Change {
  if (before === after) return 'unchanged';
  return after ? 'enters' : 'leaves';
}

/** Whether `from` may move to `to`, and if so what the move does. */
export function transition(from: WorkerState, to: WorkerState): Transition {
  const a = LIFECYCLE[from];
  if (from !== to && !a.to.includes(to)) return { allowed: false, from, to };
  const b = LIFECYCLE[to];
  return {
    allowed: true,
    effects: {
      routing: change(a.routable, b.routable),
      gpus: change(a.holdsGpus, b.holdsGpus),
      probing: change(a.probed, b.probed),
      store: 'write',
    },
  };
}

/** Every state the table knows (a test keeps it equal to the domain's WORKER_STATES). */
export const TABLE_STATES: readonly WorkerState[] = WORKER_STATES.filter((s) => s in LIFECYCLE);

/**
 * A move the table refuses: a bug in the caller. In production it is logged at error with both states and the
 * worker keeps its state (the process goes on); tests assert that none is logged.
 */
export class RefusedTransitionError extends Error {
  readonly code = 'WORKER_TRANSITION_REFUSED';
  constructor(
    readonly workerId: string,
    readonly from: WorkerState,
    readonly to: WorkerState,
  ) {
    super(`worker ${workerId} cannot move from ${from} to ${to}`);
    this.name = 'RefusedTransitionError';
  }
}
