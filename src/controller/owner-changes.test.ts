import { describe, expect, it } from 'vitest';
import { sampleEndpoint } from '../../test/support/fixtures.js';
import { OwnerChanges } from './owner-changes.js';

describe('OwnerChanges', () => {
  it('clears the failures of an endpoint whose updatedAt moved, by the whole pass or its own reconcile', () => {
    const cleared: string[] = [];
    const changes = new OwnerChanges({ clear: (id) => cleared.push(id) });
    const [a, b] = [sampleEndpoint({ at: 1 }), sampleEndpoint({ at: 1 })];
    changes.sawAll([a, b]);
    expect(cleared).toEqual([]);
    changes.saw(a.id, { ...a, updatedAt: 2 });
    expect(cleared).toEqual([a.id]);
    changes.saw(a.id, { ...a, updatedAt: 2 });
    changes.sawAll([
      { ...a, updatedAt: 2 },
      { ...b, updatedAt: 3 },
    ]);
    expect(cleared).toEqual([a.id, b.id]);
    // Deleted, then seen again (a new endpoint of that id cannot be, but nothing is held): no clear.
    changes.saw(b.id, undefined);
    changes.saw(b.id, { ...b, updatedAt: 9 });
    expect(cleared).toEqual([a.id, b.id]);
  });
});
