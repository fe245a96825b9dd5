import { describe, expect, it } from 'vitest';
import { sampleEndpoint } from '../../test/support/fixtures.js';
import { RoutingTable } from './routing-table.js';

describe('RoutingTable', () => {
  const worker = (id: string, port: number) => ({ id, address: { host: '127.0.0.1', port } });

  it('answers what was last published: endpoints by id and appName, routable workers, none for the rest', () => {
    const table = new RoutingTable();
    const [a, b] = [sampleEndpoint(), sampleEndpoint()];
    table.publish([a, b], new Map([[a.id, [worker('w1', 9001)]]]));
    expect(table.endpointById(a.id)).toBe(a);
    expect(table.endpointByAppName(b.spec.appName)).toBe(b);
    expect(table.routableWorkers(a.id)).toEqual([worker('w1', 9001)]);
    expect(table.routableWorkers(b.id)).toEqual([]);
    // A later publication replaces the whole view: a deleted endpoint is gone.
    table.publish([b], new Map());
    expect(table.endpointById(a.id)).toBeUndefined();
    expect(table.endpointByAppName(a.spec.appName)).toBeUndefined();
  });

  it('tells readers after every publication, workers alone included, until they unsubscribe', () => {
    const table = new RoutingTable();
    const e = sampleEndpoint();
    const seen: number[] = [];
    const unsubscribe = table.onChange(() => seen.push(table.routableWorkers(e.id).length));
    table.publish([e], new Map());
    table.publishRoutable(e.id, [worker('w1', 9001), worker('w2', 9002)]);
    expect(table.endpointById(e.id)).toBe(e);
    unsubscribe();
    table.publishRoutable(e.id, []);
    expect(seen).toEqual([0, 2]);
  });

  it('replaces one endpoint alone (its record, workers and condition), deleted ones leave, not counted as a publication', () => {
    const table = new RoutingTable();
    const [a, b] = [sampleEndpoint(), sampleEndpoint()];
    table.publish([a, b], new Map([[b.id, [worker('w1', 9001)]]]));
    let told = 0;
    table.onChange(() => {
      told += 1;
    });
    const renamed = { ...a, spec: { ...a.spec, appName: 'renamed' } };
    const condition = { waitingFor: 'a GPU' };
    table.publishEndpoint(a.id, renamed, [worker('w2', 9002)], condition);
    expect(table.endpointById(a.id)).toBe(renamed);
    expect(table.endpointByAppName('renamed')).toBe(renamed);
    expect(table.endpointByAppName(a.spec.appName)).toBeUndefined();
    expect(table.routableWorkers(a.id)).toEqual([worker('w2', 9002)]);
    expect(table.conditionOf(a.id)).toBe(condition);
    expect(table.routableWorkers(b.id)).toEqual([worker('w1', 9001)]);
    table.publishEndpoint(b.id, undefined, [], undefined);
    expect(table.endpointById(b.id)).toBeUndefined();
    expect(table.endpointByAppName(b.spec.appName)).toBeUndefined();
    expect(table.routableWorkers(b.id)).toEqual([]);
    expect([...table.endpoints()]).toEqual([renamed]);
    expect(told).toBe(2);
    expect(table.publications).toBe(1);
  });

  it("passes a reader's request for a fresh look to the source", () => {
    const table = new RoutingTable();
    let asked = 0;
    table.onRefreshRequested(() => {
      asked += 1;
    });
    table.requestRefresh();
    table.requestRefresh();
    expect(asked).toBe(2);
  });
});
