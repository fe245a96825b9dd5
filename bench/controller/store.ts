/** A fresh SQLite store in a temp directory, opened as `corral serve` opens it, and the API's endpoint insert. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Endpoint } from '../../src/domain/endpoint.js';
import { connectSqlite } from '../../src/store/sqlite/connect.js';
import { Store } from '../../src/store/store.js';

export async function openSqlite(): Promise<{ store: Store; dispose(): Promise<void> }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'corral-bench-ctl-'));
  const store = new Store({ connection: connectSqlite(join(dataDir, 'corral.db')) });
  const dispose = async () => {
    await store.close();
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    await store.migrate();
  } catch (error) {
    await dispose();
    throw error;
  }
  return { store, dispose };
}

export async function insertEndpoint(store: Store, endpoint: Endpoint): Promise<void> {
  await store.endpoints.create(
    endpoint,
    [{ at: endpoint.createdAt, type: 'created', message: 'endpoint created', data: { revision: 1 } }],
    {
      at: endpoint.createdAt,
      ownerId: endpoint.ownerId,
      actor: 'bench',
      action: 'endpoint.create',
      targetId: endpoint.id,
    },
  );
}
