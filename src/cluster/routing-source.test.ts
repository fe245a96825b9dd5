/**
 * One contract for both ways a gateway learns where traffic goes: the in-process routing table the controller
 * publishes to (one process, SQLite), and the store-fed one (several replicas): the leader's table copied into the
 * `routes` table by `RoutePublisher`, read back into another table by `RouteFeed` (on SQLite by refresh, on
 * PostgreSQL by its change feed). Whatever the source publishes, the view shows once it has settled.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { sampleEndpoint } from '../../test/support/fixtures.js';
import { followRoutes, publishRoutes, untilFollowed } from '../../test/support/route-follower.js';
import { storeRerun, storeTargets } from '../../test/support/stores.js';
import { RoutingTable } from '../controller/routing-table.js';
import type { Endpoint } from '../domain/endpoint.js';
import type { EndpointCondition, RoutableWorker, RoutingView } from '../ports/routing-view.js';
import type { Store } from '../store/store.js';

interface Source {
  /** Where the controller publishes. */
  table: RoutingTable;
  /** What a gateway reads (a RoutingTable in both cases, which lists its endpoints). */
  view: RoutingTable;
  /** Resolves once the view shows what was published. */
  settle(): Promise<void>;
  close(): Promise<void>;
}

const _silent = { warn: () => undefined, info: () => undefined };

const inProcess = {
  name: 'in-process',
  async open(): Promise<Source> {
    const table = new RoutingTable();
    return { table, view: table, settle: async () => undefined, close: async () => undefined };
  },
};

/** Leader's table -> publisher -> store -> feed -> another table, the way two replicas see each other. */
async function storeFed(leaderStore: Store, followerStore: Store): Promise<Source> {
  const channel = leaderStore.listener?.channel('routes') ?? 'routes';
  const { table, publisher } = await publishRoutes(leaderStore, channel);
  const { view, feed, change, close } = await followRoutes(followerStore, channel);
  return {
    table,
    view,
    async settle() {
      // Let the publisher's turn pass, then its write land.
      await new Promise((resolve) => setImmediate(resolve));
      await publisher.settled();
      if (!change) {
        await feed.refresh();
        return;
      }
      // PostgreSQL: the notification of the commit brings it; no refresh is asked here.
      const expected = JSON.stringify(snapshot(table));
      await untilFollowed(() => JSON.stringify(snapshot(view)) === expected);
    },
    async close() {
      publisher.end();
      await close();
    },
  };
}

/** What a view shows of every endpoint it knows (in id order). */
function snapshot(view: RoutingView & Pick<RoutingTable, 'endpoints'>) {
  return [...view.endpoints()]
    .map((e) => ({
      id: e.id,
      appName: e.spec.appName,
      desired: e.desired,
      workers: view.routableWorkers(e.id).map((w) => ({ id: w.id, address: w.address, wake: w.wake })),
      condition: view.conditionOf(e.id),
    }))
    .sort((a, b) => a.id.localeCompare(b.id));
}

const worker = (id: string, port: number): RoutableWorker => ({ id, address: { host: '127.0.0.1', port } });

// The in-process table has no store: it runs in the unit tier, not again in the PostgreSQL rerun.
const sources = [
  ...(storeRerun() ? [] : [inProcess]),
  ...storeTargets().map((target) => ({
    name: `store-fed on ${target.name}`,
    async open(): Promise<Source> {
      const opened = await target.open();
      const source = await storeFed(opened.store, opened.sibling());
      return {
        ...source,
        async close() {
          await source.close();
          await opened.dispose();
        },
      };
    },
  })),
];

describe.each(sources)('a routing view fed $name', (kind) => {
  let source: Source;
  afterEach(async () => {
    await source.close();
  });

  it('shows the endpoints, their routable workers and conditions the controller published, and says so', async () => {
    source = await kind.open();
    let changes = 0;
    source.view.onChange(() => {
      changes += 1;
    });
    const a = sampleEndpoint();
    const b = sampleEndpoint();
    const refused: EndpointCondition = {
      refusal: { kind: 'failed', reason: 'CRASH_LOOP', message: 'crashed', lastWorkerMessage: 'exit 3' },
    };
    source.table.publish(
      [a, b],
      new Map([[a.id, [worker('w1', 9001), worker('w2', 9002)]]]),
      new Map([[b.id, refused]]),
    );
    await source.settle();
    expect(changes).toBeGreaterThan(0);
    expect(source.view.endpointByAppName(a.spec.appName)).toEqual(a);
    expect(source.view.endpointById(b.id)).toEqual(b);
    expect(source.view.routableWorkers(a.id).map((w) => w.id)).toEqual(['w1', 'w2']);
    expect(source.view.routableWorkers(a.id)[0]?.address).toEqual({ host: '127.0.0.1', port: 9001 });
    expect(source.view.routableWorkers(b.id)).toEqual([]);
    expect(source.view.conditionOf(b.id)).toEqual(refused);
    expect(source.view.conditionOf(a.id)).toBeUndefined();
  });

  it('carries the wake that brought a worker into routing (its tier, phases and time), for the Server-Timing of any replica', async () => {
    source = await kind.open();
    const a = sampleEndpoint();
    const thawed: RoutableWorker = {
      ...worker('w1', 9001),
      wake: { tier: 'thaw', phases: [{ name: 'thaw', ms: 12.5 }], at: 1_700_000_000_123 },
    };
    const cold: RoutableWorker = {
      ...worker('w2', 9002),
      wake: {
        tier: 'cold',
        phases: [
          { name: 'placement', ms: 2 },
          { name: 'pull', ms: 0 },
          { name: 'create', ms: 640 },
          { name: 'ready', ms: 1_200 },
        ],
        at: 1_700_000_000_456,
      },
    };
    source.table.publish([a], new Map([[a.id, [thawed, cold, worker('w3', 9003)]]]));
    await source.settle();
    expect(source.view.routableWorkers(a.id).map((w) => [w.id, w.wake])).toEqual([
      ['w1', thawed.wake],
      ['w2', cold.wake],
      ['w3', undefined],
    ]);
  });

  it("follows one endpoint's health changes, an update, and a deletion", async () => {
    source = await kind.open();
    const a = sampleEndpoint();
    const b = sampleEndpoint();
    source.table.publish([a, b], new Map([[a.id, [worker('w1', 9001)]]]));
    await source.settle();
    source.table.publishRoutable(b.id, [worker('w3', 9003)]);
    source.table.publishRoutable(a.id, []);
    await source.settle();
    expect(source.view.routableWorkers(a.id)).toEqual([]);
    expect(source.view.routableWorkers(b.id).map((w) => w.id)).toEqual(['w3']);
    const stopped: Endpoint = { ...b, desired: 'stopped', updatedAt: b.updatedAt + 1 };
    source.table.publish([stopped], new Map());
    await source.settle();
    expect(source.view.endpointById(a.id)).toBeUndefined();
    expect(source.view.endpointByAppName(a.spec.appName)).toBeUndefined();
    expect(source.view.endpointById(b.id)?.desired).toBe('stopped');
    expect(source.view.routableWorkers(b.id)).toEqual([]);
  });
});
