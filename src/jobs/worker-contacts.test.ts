import { describe, expect, it } from 'vitest';
import type { WorkerContactStore } from '../store/jobs/job-roles.js';
import { WorkerContacts } from './worker-contacts.js';

/** The `job_workers` rows in memory: all WorkerContacts takes of the store. */
class ContactRows implements WorkerContactStore {
  readonly seenAt = new Map<string, number>();
  writes = 0;
  failNext = false;

  async workerSeen(workerId: string, _endpointId: string, now: number): Promise<void> {
    this.writes += 1;
    if (this.failNext) {
      this.failNext = false;
      throw new Error('database unavailable');
    }
    this.seenAt.set(workerId, now);
  }

  async workerSeenAt(workerId: string): Promise<number | undefined> {
    return this.seenAt.get(workerId);
  }
}

function contactsOver(rows: ContactRows) {
  const clock = { now: 1_000 };
  const warnings: string[] = [];
  const contacts = new WorkerContacts({
    jobs: rows,
    clock: () => clock.now,
    logger: { warn: (_fields, message) => warnings.push(message), error: () => {} },
    writeEveryMs: 5_000,
    silentAfterMs: 30_000,
  });
  return { contacts, clock, warnings };
}

const settled = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("a queue worker's contacts", () => {
  it('make it healthy once it has polled, and unhealthy once silent past silentAfterMs', async () => {
    const rows = new ContactRows();
    const { contacts, clock } = contactsOver(rows);
    expect(await contacts.verdict('w-1')).toEqual({ healthy: false, reason: 'never-polled' });

    contacts.seen('ep-1', 'w-1');
    await settled();
    expect(await contacts.verdict('w-1')).toEqual({ healthy: true });

    clock.now += 30_001;
    expect(await contacts.verdict('w-1')).toEqual({ healthy: false, reason: 'silent', silentMs: 30_001 });
  });

  it('are written at most once per writeEveryMs per worker', async () => {
    const rows = new ContactRows();
    const { contacts, clock } = contactsOver(rows);
    contacts.seen('ep-1', 'w-1');
    clock.now += 4_999;
    contacts.seen('ep-1', 'w-1');
    contacts.seen('ep-1', 'w-2');
    await settled();
    expect(rows.writes).toBe(2);
    clock.now += 1;
    contacts.seen('ep-1', 'w-1');
    await settled();
    expect(rows.writes).toBe(3);
    expect(rows.seenAt.get('w-1')).toBe(6_000);
  });

  it('that could not be stored are written again at the next contact, with a warning', async () => {
    const rows = new ContactRows();
    const { contacts, warnings } = contactsOver(rows);
    rows.failNext = true;
    contacts.seen('ep-1', 'w-1');
    await settled();
    expect(warnings).toEqual(['worker contact not stored']);
    contacts.seen('ep-1', 'w-1');
    await settled();
    expect(await contacts.verdict('w-1')).toEqual({ healthy: true });
  });
});
