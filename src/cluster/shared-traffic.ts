/**
 * `SharedTraffic`: what makes every replica's gateway route every endpoint (several replicas on PostgreSQL,
 * docs/operations.md), built before the gateway. It owns this replica's change feed (LISTEN on two channels:
 * `routes`, which the leader's writes notify, and `leader`, on which any replica asks the leader for a pass or tells
 * it a request queued; the leader's messages go to whoever subscribed), the route feed that fills the gateway's
 * routing table, and the membership watch and share schedule that split each worker's slots. The publishers of
 * this gateway's queues and of the controller's routes come with the gateway (shared-publishers.ts).
 * `app/build-replica.ts` builds it only on PostgreSQL: with one process the gateway reads the controller's table in
 * process, as before.
 */

import type { Endpoint } from '../domain/endpoint.js';
import { systemClock, systemTimers, type Timers } from '../ports/clock.js';
import type { QueueSignals } from '../ports/queue-signals.js';
import { ChangeFeed } from '../store/postgres/change-feed.js';
import type { Store } from '../store/store.js';
import { ClusterSignals } from './cluster-signals.js';
import { type ForwardTarget, forwardTarget } from './forwarding.js';
import { MembershipWatch } from './membership-watch.js';
import { RouteFeed, type RouteSink } from './route-feed.js';
import type { Membership } from './shares.js';
import type { LocalEndpointLoad } from './signal-publisher.js';
import { ShareSchedule } from './slot-shares.js';

/** The gateway's routing table (controller/routing-table.ts `RoutingTable`), which the route feed fills. */
export interface GatewayRoutes extends RouteSink {
  endpointById(endpointId: string): Endpoint | undefined;
  onRefreshRequested(listener: () => void): () => void;
}

/** What any replica sends the leader: a pass asked for, or a request queued on its gateway for an endpoint. */
export type LeaderMessage = { kind: 'pass' } | { kind: 'queued'; endpointId: string };

/** A leader message as the `leader` channel carries it (`poke`, `queued:<endpointId>`). */
export function leaderMessageText(message: LeaderMessage): string {
  return message.kind === 'queued' ? `queued:${message.endpointId}` : 'poke';
}

/** A leader message read from the channel; anything but a queued request asks for a pass. */
export function leaderMessageOf(text: string): LeaderMessage {
  return text.startsWith('queued:')
    ? { kind: 'queued', endpointId: text.slice('queued:'.length) }
    : { kind: 'pass' };
}

export interface SharedTrafficTiming {
  /** Routes re-read this often while the change feed is down. */
  pollMs: number;
  /** ... and this often while it is up. */
  safetyMs: number;
  /** The membership read this often. */
  membershipMs: number;
  /** A replica is live while its last beat is this recent. */
  aliveMs: number;
  /** Taken off the time a replica knows itself counted in. */
  marginMs: number;
  /** How long a grown share waits at least after a membership change. */
  settleMs: number;
  /** This gateway's queues written at least this often while busy, and at most every minGapMs. */
  signalsMs: number;
  signalsMinGapMs: number;
}

export const DEFAULT_SHARED_TIMING: SharedTrafficTiming = {
  pollMs: 1_000,
  safetyMs: 5_000,
  membershipMs: 1_000,
  aliveMs: 6_000,
  marginMs: 1_000,
  settleMs: 1_000,
  signalsMs: 1_000,
  signalsMinGapMs: 50,
};

export interface SharedTrafficOptions {
  store: Pick<Store, 'routes' | 'leases' | 'replicas' | 'gatewaySignals' | 'listener' | 'notify'>;
  replicaId: string;
  gatewayRoutes: GatewayRoutes;
  timing?: SharedTrafficTiming;
  timers?: Timers;
  logger: { info(fields: object, message: string): void; warn(fields: object, message: string): void };
}

export class SharedTraffic {
  readonly #o: SharedTrafficOptions;
  readonly #timing: SharedTrafficTiming;
  readonly #timers: Timers;
  readonly #channels: { routes: string; leader: string };
  readonly #schedule: ShareSchedule;
  readonly #feed: RouteFeed;
  readonly #membership: MembershipWatch;
  readonly #changes: ChangeFeed;
  readonly #leaderListeners = new Set<(message: LeaderMessage) => void>();
  #pokeSent = Number.NEGATIVE_INFINITY;

  constructor(options: SharedTrafficOptions) {
    this.#o = options;
    this.#timing = options.timing ?? DEFAULT_SHARED_TIMING;
    this.#timers = options.timers ?? systemTimers;
    const listener = options.store.listener;
    if (!listener) throw new Error('shared traffic needs PostgreSQL (a change feed)');
    this.#channels = { routes: listener.channel('routes'), leader: listener.channel('leader') };
    const monotonic = () => performance.now();
    const timing = this.#timing;
    this.#schedule = new ShareSchedule({ self: options.replicaId, timing: { settleMs: timing.settleMs } });
    this.#feed = new RouteFeed({
      routes: options.store.routes,
      sink: options.gatewayRoutes,
      shares: { share: (workerId, capacity) => this.#schedule.share(workerId, capacity, monotonic()) },
      timers: this.#timers,
      pollMs: timing.pollMs,
      safetyMs: timing.safetyMs,
      logger: options.logger,
    });
    let reads = 0;
    this.#membership = new MembershipWatch({
      replicaId: options.replicaId,
      replicas: options.store.replicas,
      schedule: this.#schedule,
      aliveMs: timing.aliveMs,
      marginMs: timing.marginMs,
      intervalMs: timing.membershipMs,
      monotonic,
      timers: this.#timers,
      logger: options.logger,
      onChange: () => this.#feed.reshare(),
      onRead: () => {
        // Now and then, the queue rows of replicas gone from the heartbeat table go too.
        if (++reads % 30 === 0) void options.store.gatewaySignals.prune().catch(() => undefined);
      },
    });
    this.#changes = new ChangeFeed({
      connect: listener.connect,
      channels: [this.#channels.routes, this.#channels.leader],
      onNotification: (channel, payload) => {
        if (channel === this.#channels.routes) void this.#feed.refresh();
        else {
          const message = leaderMessageOf(payload);
          for (const hear of this.#leaderListeners) hear(message);
        }
      },
      onState: (up) => this.#feed.feedState(up),
      timers: this.#timers,
      logger: options.logger,
    });
    options.gatewayRoutes.onRefreshRequested(() => {
      void this.#feed.refresh();
      this.requestPass();
    });
  }

  /** The timings this replica's shared traffic keeps (its publishers' too). */
  get timing(): SharedTrafficTiming {
    return this.#timing;
  }

  /** The live replicas' count and this one's rank, for the limits split between replicas (the API's rate limit). */
  split(): Membership {
    return this.#membership.split;
  }

  /** The scaler's signals: this gateway's queues plus every other live replica's (read while this replica leads). */
  clusterSignals(local: QueueSignals): ClusterSignals {
    return new ClusterSignals({
      local,
      read: (ids, endpointId) => this.#o.store.gatewaySignals.read(ids, endpointId),
      others: () => this.#membership.others,
      clock: systemClock,
      timers: this.#timers,
      pollMs: this.#timing.signalsMs,
      logger: this.#o.logger,
    });
  }

  /** The channel the controller's route writes are announced on. */
  get routesChannel(): string {
    return this.#channels.routes;
  }

  /** Tells the leader (whichever replica it is) that a request queued on this gateway for the endpoint. */
  tellLeaderQueued(endpointId: string): Promise<void> {
    return this.#o.store.notify(this.#channels.leader, leaderMessageText({ kind: 'queued', endpointId }));
  }

  /** Every message sent to the leader, from any replica (this one's too), until unsubscribed. */
  onLeaderMessage(listener: (message: LeaderMessage) => void): () => void {
    this.#leaderListeners.add(listener);
    return () => this.#leaderListeners.delete(listener);
  }

  /** Listens, reads the routes and the membership once, then keeps them current. */
  async start(): Promise<void> {
    this.#changes.start();
    await this.#feed.start();
    await this.#membership.start();
  }

  /** Asks the leader (whichever replica it is) for a controller pass: an endpoint changed, or a route is missing. */
  requestPass(): void {
    const now = performance.now();
    if (now - this.#pokeSent < 50) return;
    this.#pokeSent = now;
    void this.#o.store
      .notify(this.#channels.leader, leaderMessageText({ kind: 'pass' }))
      .catch(() => undefined);
  }

  /**
   * Where this gateway forwards the requests of an endpoint with these routable workers (their `slots` its shares)
   * and `capacity` slots each: the replica holding most of them when it holds none (forwarding.ts); else undefined.
   */
  forwardTarget(
    workers: readonly { id: string; slots?: number }[],
    capacity: number,
  ): ForwardTarget | undefined {
    return forwardTarget({
      self: this.#o.replicaId,
      members: this.#schedule.members,
      gatewayUrls: this.#membership.gatewayUrls,
      workers: workers.map((w) => ({ id: w.id, slots: w.slots ?? capacity })),
      capacity,
    });
  }

  /** The membership this replica keeps within its shares for, given its gateway's load (its heartbeat row says it). */
  settledFor(loads: readonly LocalEndpointLoad[]): string | null {
    const load: { workerId: string; capacity: number; inFlight: number }[] = [];
    for (const endpoint of loads) {
      const capacity = this.#o.gatewayRoutes.endpointById(endpoint.endpointId)?.spec.workers.maxConcurrent;
      if (capacity === undefined) continue;
      for (const w of endpoint.workers) load.push({ workerId: w.id, capacity, inFlight: w.inFlight });
    }
    return this.#schedule.settledFor(load);
  }

  async close(): Promise<void> {
    await this.#membership.stop();
    this.#feed.close();
    await this.#changes.close();
  }
}
