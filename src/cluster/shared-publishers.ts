/**
 * `SharedPublishers`: a replica's part of the shared traffic (shared-traffic.ts) that comes with its gateway and
 * its controller. Always: the publisher of this gateway's queues, which tells the leader when a request queues.
 * During a term of this replica's: the publisher of the controller's routes, the sum of every replica's queues for
 * the scaler, and what the leader is sent (a pass asked for, a request queued on another gateway).
 */
import { systemClock, type Timers } from '../ports/clock.js';
import type { QueueSignals } from '../ports/queue-signals.js';
import type { Store } from '../store/store.js';
import type { ClusterSignals } from './cluster-signals.js';
import type { TermFence } from './elector.js';
import type { ControllerTerms } from './leadership.js';
import { type PublishedRoutes, RoutePublisher } from './route-publisher.js';
import type { LeaderMessage, SharedTraffic } from './shared-traffic.js';
import { type LocalEndpointLoad, SignalPublisher } from './signal-publisher.js';

/** What is shared of this replica's gateway (gateway/gateway.ts `Gateway`). */
export interface SharedGateway extends QueueSignals {
  loads(): readonly LocalEndpointLoad[];
}

export interface SharedPublishersOptions {
  shared: Pick<
    SharedTraffic,
    'routesChannel' | 'tellLeaderQueued' | 'onLeaderMessage' | 'settledFor' | 'timing'
  >;
  store: Pick<Store, 'routes' | 'leases' | 'gatewaySignals'>;
  replicaId: string;
  gateway: SharedGateway;
  /** The table the controller publishes to. */
  controllerRoutes: PublishedRoutes;
  /** The scaler's signals over every replica's queues (`SharedTraffic.clusterSignals`), read during a term. */
  signals: ClusterSignals;
  /** Asks this replica's controller for a pass (nothing while it does not lead). */
  poke: () => void;
  timers: Timers;
  logger: { info(fields: object, message: string): void; warn(fields: object, message: string): void };
}

export class SharedPublishers {
  readonly #o: SharedPublishersOptions;
  readonly #routes: RoutePublisher;
  readonly #queues: SignalPublisher;
  readonly #unsubscribe: () => void;
  #term: TermFence | undefined;

  constructor(options: SharedPublishersOptions) {
    this.#o = options;
    const { shared, store, gateway, timers, logger } = options;
    this.#routes = new RoutePublisher({
      table: options.controllerRoutes,
      store,
      channel: shared.routesChannel,
      timers,
      logger,
    });
    this.#queues = new SignalPublisher({
      replicaId: options.replicaId,
      loads: () => gateway.loads(),
      onQueued: (listener) => gateway.onQueued(listener),
      signals: store.gatewaySignals,
      notifyLeader: (endpointId) => shared.tellLeaderQueued(endpointId),
      clock: systemClock,
      timers,
      everyMs: shared.timing.signalsMs,
      minGapMs: shared.timing.signalsMinGapMs,
      logger,
    });
    this.#unsubscribe = shared.onLeaderMessage((message) => this.#toLeader(message));
  }

  /** Leadership's terms around the traffic side's: a term also publishes the routes and sums the queues. */
  terms(inner: ControllerTerms): ControllerTerms {
    return {
      start: () => inner.start(),
      lead: async (fence: TermFence) => {
        this.#term = fence;
        this.#routes.begin(fence);
        // The controller's first pass must see the other replicas' traffic: a worker only they use is not idle.
        await this.#o.signals.start();
        // Deposed during that read: the step-down came first, and no controller starts for the term.
        if (this.#term !== fence) return;
        await inner.lead(fence);
      },
      stepDown: async () => {
        this.#term = undefined;
        this.#routes.end();
        this.#o.signals.stop();
        await inner.stepDown();
      },
    };
  }

  /** The fencing token of the term this replica leads now; null while it does not (the history's leader rows). */
  term(): number | null {
    return this.#term?.claim().token ?? null;
  }

  /** The membership this replica keeps within its shares for (its heartbeat row says it), or null. */
  settled(): string | null {
    return this.#o.shared.settledFor(this.#o.gateway.loads());
  }

  /** Publishes this gateway's queues from now on (once the shared traffic has started). */
  start(): void {
    this.#queues.start();
  }

  async close(): Promise<void> {
    this.#unsubscribe();
    this.#routes.end();
    this.#o.signals.stop();
    await this.#queues.close();
  }

  #toLeader(message: LeaderMessage): void {
    if (this.#term === undefined) return;
    if (message.kind === 'queued') void this.#o.signals.remoteQueued(message.endpointId);
    else this.#o.poke();
  }
}
