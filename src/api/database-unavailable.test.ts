/**
 * The API of a replica whose PostgreSQL cannot be reached (the real driver against a port nothing listens on):
 * writes and reads answer 503 DATABASE_UNAVAILABLE, /readyz 503 with the reason, /healthz stays 200.
 * test/e2e/replica-faults.test.ts takes a real server away and gives it back.
 */
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PREFIX } from '../../test/support/api.js';
import { buildApi } from '../app/build-api.js';
import { loadConfig } from '../config/config.js';
import { SecretBox } from '../crypto/secret-box.js';
import { connectPostgres } from '../store/postgres/connect.js';
import { Store } from '../store/store.js';

/** A port nothing listens on (bound, then closed). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  return typeof address === 'object' && address ? address.port : 0;
}

describe('the API while its database cannot be reached', () => {
  let app: FastifyInstance;
  let store: Store;
  // Whatever the key: checking it needs the database.
  const key = `sk_${'a'.repeat(12)}_${'b'.repeat(32)}`;

  beforeAll(async () => {
    store = new Store({
      connection: connectPostgres({
        connectionString: `postgres://corral:x@127.0.0.1:${await closedPort()}/corral`,
      }),
    });
    app = await buildApi({
      config: loadConfig({
        flags: { gpus: 'h100-80g:2', dataDir: '/nonexistent', config: '/test/corral.yaml' },
        env: {},
        readFile: () => '',
      }),
      store,
      gpus: [],
      logger: pino({ level: 'silent' }),
      secrets: new SecretBox({ key: randomBytes(32) }),
      replica: { id: 'rep-lost', leading: () => false },
    });
  });
  afterAll(async () => {
    await app.close();
    await store.close();
  });

  const call = (method: 'GET' | 'POST', path: string, body?: unknown) =>
    app.inject({
      method,
      url: `${PREFIX}/${path}`,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    });

  it('answers writes and reads 503 DATABASE_UNAVAILABLE', async () => {
    for (const [method, path, body] of [
      ['POST', 'endpoint/create', { endpoint: { image: { image: 'nginx' } } }],
      ['POST', 'secret/save', { name: 'x', value: 'y' }],
      ['GET', 'endpoints', undefined],
    ] as const) {
      const answer = await call(method, path, body);
      expect(answer.statusCode, `${method} ${path}`).toBe(503);
      expect(answer.json()).toEqual({
        code: 503,
        reason: 'DATABASE_UNAVAILABLE',
        message: 'the database cannot be reached now; retry shortly',
        metadata: {},
      });
    }
  });

  it('/readyz answers 503 with the reason; /healthz stays 200', async () => {
    const ready = await app.inject({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(503);
    expect(ready.json()).toEqual({
      status: 'unavailable',
      ready: false,
      reason: 'the database did not answer within 2 s',
      database: 'unreachable',
      replica: 'rep-lost',
      leader: false,
    });
    const health = await app.inject({ method: 'GET', url: '/healthz' });
    expect(health.statusCode).toBe(200);
  });
});
