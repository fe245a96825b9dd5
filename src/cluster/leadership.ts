/**
 * Who runs the controller in this process (docs/operations.md). PostgreSQL: the replicas elect a leader through
 * the controller's lease (elector.ts), and each term runs a fresh fenced controller. SQLite: one process holds the
 * database (its process lock), so it seizes the lease and always leads.
 */
import { systemTimers } from '../ports/clock.js';
import { CONTROLLER_LEASE } from '../service/cluster-service.js';
import type { LeaseClaim } from '../store/cluster/leases.js';
import type { Store } from '../store/store.js';
import { DEFAULT_ELECTION_TIMING } from './election.js';
import { Elector, type ElectorLogger, type TermFence } from './elector.js';

export interface Leadership {
  /** Whether this process runs the controller now. */
  leading(): boolean;
  /** Starts taking part (once the runtime is ready). */
  begin(): Promise<void>;
  /** Steps down (the controller stops) and releases the lease. */
  end(): Promise<void>;
}

/** What leadership starts and stops: the traffic side's controller (main.ts `Traffic`). */
export interface ControllerTerms {
  /** One process: the controller runs from now on, unfenced. */
  start(): void;
  /** A term begins under `fence`. */
  lead(fence: TermFence): Promise<void>;
  /** The term is over. */
  stepDown(): Promise<void>;
}

export function leadershipOf(options: {
  store: Pick<Store, 'dialect' | 'leases'>;
  terms: ControllerTerms;
  replicaId: string;
  logger: ElectorLogger;
}): Leadership {
  const { store, terms, replicaId } = options;
  if (store.dialect === 'sqlite') {
    let claim: LeaseClaim | undefined;
    return {
      leading: () => claim !== undefined,
      async begin() {
        claim = await store.leases.seize(CONTROLLER_LEASE, replicaId);
        terms.start();
      },
      async end() {
        if (claim) await store.leases.release(claim);
      },
    };
  }
  const elector = new Elector({
    leases: store.leases,
    name: CONTROLLER_LEASE,
    holder: replicaId,
    timing: DEFAULT_ELECTION_TIMING,
    monotonic: () => performance.now(),
    timers: systemTimers,
    logger: options.logger,
    onElected: (fence) => void terms.lead(fence),
    onDeposed: () => terms.stepDown(),
  });
  return {
    leading: () => elector.leading,
    begin: async () => elector.start(),
    end: () => elector.stop(),
  };
}
