/** The controller's snapshot re-reads only endpoints whose version moved, and keeps the store's order and deletions. */
import { describe, expect, it } from 'vitest';
import { sampleEndpoint } from '../../test/support/fixtures.js';
import type { Endpoint } from '../domain/endpoint.js';
import type { EndpointVersion, VersionedEndpoint } from '../store/endpoints/endpoints.js';
import { EndpointSnapshot, type EndpointSource } from './endpoint-snapshot.js';

/** An endpoint table in memory, counting the rows it is asked to read in full. */
class Rows implements EndpointSource {
  readonly rows = new Map<string, VersionedEndpoint>();
  fullReads: string[] = [];

  put(endpoint: Endpoint): void {
    const version = (this.rows.get(endpoint.id)?.version ?? 0) + 1;
    this.rows.set(endpoint.id, { version, endpoint });
  }

  async liveVersions(): Promise<EndpointVersion[]> {
    return [...this.rows.values()].map((r) => ({ id: r.endpoint.id, version: r.version }));
  }

  async getMany(ids: readonly string[]): Promise<VersionedEndpoint[]> {
    this.fullReads.push(...ids);
    return ids.flatMap((id) => {
      const row = this.rows.get(id);
      return row ? [row] : [];
    });
  }
}

describe('EndpointSnapshot', () => {
  it('reads every endpoint once, then only those written since', async () => {
    const rows = new Rows();
    const [a, b, c] = [sampleEndpoint(), sampleEndpoint(), sampleEndpoint()];
    for (const e of [a, b, c]) rows.put(e);
    const snapshot = new EndpointSnapshot({ source: rows });

    expect((await snapshot.read()).map((e) => e.id)).toEqual([a.id, b.id, c.id]);
    expect(rows.fullReads).toEqual([a.id, b.id, c.id]);

    rows.fullReads = [];
    expect(await snapshot.read()).toHaveLength(3);
    expect(rows.fullReads).toEqual([]);

    const renamed = { ...b, spec: { ...b.spec, name: 'renamed' } };
    rows.put(renamed);
    const read = await snapshot.read();
    expect(rows.fullReads).toEqual([b.id]);
    expect(read.map((e) => e.id)).toEqual([a.id, b.id, c.id]);
    expect(read[1]?.spec.name).toBe('renamed');
  });

  it('leaves out an endpoint deleted since, and one deleted between the listing and the read', async () => {
    const rows = new Rows();
    const [a, b] = [sampleEndpoint(), sampleEndpoint()];
    rows.put(a);
    rows.put(b);
    const snapshot = new EndpointSnapshot({ source: rows });
    await snapshot.read();

    rows.rows.delete(a.id);
    expect((await snapshot.read()).map((e) => e.id)).toEqual([b.id]);

    const late = sampleEndpoint();
    rows.put(late);
    const listing = rows.liveVersions.bind(rows);
    rows.liveVersions = async () => {
      const versions = await listing();
      rows.rows.delete(late.id);
      return versions;
    };
    expect((await snapshot.read()).map((e) => e.id)).toEqual([b.id]);
  });

  it('keeps a newer row read between the listing and the read, without reading it again next time', async () => {
    const rows = new Rows();
    const a = sampleEndpoint();
    rows.put(a);
    const snapshot = new EndpointSnapshot({ source: rows });
    const listing = rows.liveVersions.bind(rows);
    rows.liveVersions = async () => {
      const versions = await listing();
      rows.put({ ...a, desired: 'stopped' });
      rows.liveVersions = listing;
      return versions;
    };
    expect((await snapshot.read())[0]?.desired).toBe('stopped');
    rows.fullReads = [];
    expect((await snapshot.read())[0]?.desired).toBe('stopped');
    expect(rows.fullReads).toEqual([]);
  });

  it('reads one endpoint alone in full, forgets it once deleted, and keeps it for the next whole read', async () => {
    const rows = new Rows();
    const [a, b] = [sampleEndpoint(), sampleEndpoint()];
    for (const e of [a, b]) rows.put(e);
    const snapshot = new EndpointSnapshot({ source: rows });
    await snapshot.read();
    rows.fullReads = [];
    const changed = { ...a, revision: 2 };
    rows.put(changed);
    expect(await snapshot.readOne(a.id)).toEqual(changed);
    expect(rows.fullReads).toEqual([a.id]);
    // The whole read after it finds a's version known: nothing read again.
    expect((await snapshot.read()).map((e) => e.revision)).toEqual([2, b.revision]);
    expect(rows.fullReads).toEqual([a.id]);
    rows.rows.delete(b.id);
    expect(await snapshot.readOne(b.id)).toBeUndefined();
    expect((await snapshot.read()).map((e) => e.id)).toEqual([a.id]);
  });
});
