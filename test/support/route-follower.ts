/**
 * Both ends of the routes between replicas, for the route tests and `npm run bench -- replicas`. `publishRoutes`:
 * the leader's RoutingTable, written to `store` by a RoutePublisher under a lease claimed here. `followRoutes`: a
 * replica's view as its gateway gets it, a RoutingTable filled by a RouteFeed from `store`, refreshed by a ChangeFeed
 * on `channel` (PostgreSQL) and by polling; it resolves once the change feed listens, so that a change published
 * after it is heard (the tests and the bench measure from there).
 */
import { RouteFeed } from '../../src/cluster/route-feed.js';
import { RoutePublisher } from '../../src/cluster/route-publisher.js';
import { RoutingTable } from '../../src/controller/routing-table.js';
import { systemTimers } from '../../src/ports/clock.js';
import { ChangeFeed } from '../../src/store/postgres/change-feed.js';
import type { Store } from '../../src/store/store.js';

const silent = { warn: () => undefined, info: () => undefined };

export interface RouteLeader {
  /** The controller's table: what is set here is published. */
  table: RoutingTable;
  publisher: RoutePublisher;
}

/**
 * Claims `lease` on `store` (the controller's by default; another name leaves the controller's free for
 * `corral serve` processes started on the same database later) and publishes a new table's routes on `channel`.
 */
export async function publishRoutes(
  store: Store,
  channel: string,
  lease = 'controller',
): Promise<RouteLeader> {
  const claim = await store.leases.tryAcquire(lease, 'leader', 600_000);
  if (!claim) throw new Error(`the ${lease} lease is held by another`);
  const table = new RoutingTable();
  const publisher = new RoutePublisher({ table, store, channel, timers: systemTimers, logger: silent });
  publisher.begin({ claim: () => claim });
  return { table, publisher };
}

export interface RouteFollower {
  view: RoutingTable;
  feed: RouteFeed;
  /** Absent on a store without LISTEN (SQLite): the feed polls. */
  change?: ChangeFeed;
  close(): Promise<void>;
}

export async function followRoutes(store: Store, channel: string): Promise<RouteFollower> {
  const view = new RoutingTable();
  const feed = new RouteFeed({
    routes: store.routes,
    sink: view,
    timers: systemTimers,
    pollMs: 1_000,
    safetyMs: 5_000,
    logger: silent,
  });
  const listener = store.listener;
  let change: ChangeFeed | undefined;
  if (listener) {
    await new Promise<void>((resolve) => {
      change = new ChangeFeed({
        connect: listener.connect,
        channels: [channel],
        onNotification: () => void feed.refresh(),
        onState: (up) => {
          feed.feedState(up);
          if (up) resolve();
        },
        timers: systemTimers,
        logger: silent,
      });
      change.start();
    });
  }
  await feed.start();
  return {
    view,
    feed,
    ...(change ? { change } : {}),
    async close() {
      feed.close();
      await change?.close();
    },
  };
}

/**
 * Resolves once `shows()` holds, or after `withinMs` all the same (the caller's expectations then say what is
 * missing). For a follower on PostgreSQL, whose change arrives by a notification: real I/O, so real time (5 ms
 * polls); the integration tier's PostgreSQL rerun is the only one that waits here.
 */
export async function untilFollowed(shows: () => boolean, withinMs = 5_000): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (!shows() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
}
