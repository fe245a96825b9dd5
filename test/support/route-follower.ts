/**
 * A replica's view of the routes as its gateway gets it: a RoutingTable filled by a RouteFeed from `store`, refreshed
 * by a ChangeFeed on `channel` (PostgreSQL) and by polling. Resolves once the change feed listens, so that a change
 * published after it is heard (the route tests and `npm run bench -- replicas` measure from there).
 */
import { RouteFeed } from '../../src/cluster/route-feed.js';
import { RoutingTable } from '../../src/controller/routing-table.js';
import { systemTimers } from '../../src/service/clock.js';
import { ChangeFeed } from '../../src/store/postgres/change-feed.js';
import type { Store } from '../../src/store/store.js';

const silent = { warn: () => undefined, info: () => undefined };

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
