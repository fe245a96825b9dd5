import { describe, expect, it } from 'vitest';
import { sampleEndpoint } from '../../../test/support/fixtures.js';
import { pendingRecord } from './managed-worker.js';
import { WorkerBook } from './worker-book.js';

describe('WorkerBook', () => {
  it('says whether a worker may await placement, as its records were last marked', () => {
    const book = new WorkerBook();
    const endpoint = sampleEndpoint();
    expect(book.mayAwaitPlacement).toBe(false);
    const [a, b] = [pendingRecord(endpoint, 0), pendingRecord(endpoint, 0)];
    book.track(a);
    book.track(b);
    expect(book.mayAwaitPlacement).toBe(true);
    a.state = 'pulling';
    book.markDirty(a);
    expect(book.mayAwaitPlacement).toBe(true);
    // Pending but handed to the runtime (its scheduler places it): placement is done with it.
    b.inRuntime = true;
    book.markDirty(b);
    expect(book.mayAwaitPlacement).toBe(false);
    b.inRuntime = false;
    book.markDirty(b);
    expect(book.mayAwaitPlacement).toBe(true);
    book.forget(b);
    expect(book.mayAwaitPlacement).toBe(false);
  });
});
