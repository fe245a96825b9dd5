import { describe, expect, it } from 'vitest';
import type { WorkerState } from '../domain/worker.js';
import { WorkerDirectory } from './worker-directory.js';

describe('where a worker stands', () => {
  it("takes the leading controller's word at once: draining is leaving, no record is ended, frozen is resting", async () => {
    const states = new Map<string, WorkerState>([
      ['w-run', 'running'],
      ['w-drain', 'draining'],
      ['w-frozen', 'frozen'],
    ]);
    let storeReads = 0;
    const directory = new WorkerDirectory({
      controllerState: (_endpointId, workerId) => states.get(workerId) ?? null,
      storedWorker: async () => {
        storeReads += 1;
        return undefined;
      },
      clock: () => 0,
      storeCacheMs: 1_000,
    });
    expect(['w-run', 'w-drain', 'w-frozen', 'w-gone'].map((id) => directory.standing('ep', id))).toEqual([
      'serving',
      'leaving',
      'resting',
      'ended',
    ]);
    expect(await directory.check('ep', 'w-gone')).toBe('ended');
    expect(storeReads).toBe(0);
  });

  it("where this replica does not lead, reads the store's row at most once per storeCacheMs per worker", async () => {
    let now = 0;
    const rows = new Map<string, { endpointId: string; state: WorkerState }>([
      ['w-1', { endpointId: 'ep', state: 'running' }],
    ]);
    let storeReads = 0;
    const directory = new WorkerDirectory({
      controllerState: () => undefined,
      storedWorker: async (workerId) => {
        storeReads += 1;
        return rows.get(workerId);
      },
      clock: () => now,
      storeCacheMs: 1_000,
    });
    expect(await directory.check('ep', 'w-1')).toBe('serving');
    // Another endpoint's worker id under this endpoint's path is no worker of it.
    expect(await directory.check('ep-other', 'w-1')).toBe('ended');
    rows.delete('w-1');
    now = 999;
    expect(await directory.check('ep', 'w-1')).toBe('serving');
    expect(storeReads).toBe(2);
    now = 1_000;
    expect(await directory.check('ep', 'w-1')).toBe('ended');
    expect(directory.standing('ep', 'w-1')).toBe('ended');
    expect(storeReads).toBe(3);
  });
});
