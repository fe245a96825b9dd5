import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApi, type TestApi } from '../../test/support/api.js';
import { msUntilHalfHeadClosed } from '../../test/support/half-head.js';
import { storeTargets } from '../../test/support/stores.js';
import { DEFAULT_CONNECTION_LIMITS } from '../config/connection-limits.js';
import { CONNECTIONS_CHECKING_INTERVAL_MS } from '../listeners/client-deadlines.js';
import type { Store } from '../store/store.js';

describe("the API's server holds clients to connections.api's deadlines", () => {
  let store: Store;
  let dispose: () => Promise<void>;
  let api: TestApi;
  let tight: TestApi;

  beforeAll(async () => {
    const target = storeTargets()[0];
    if (!target) throw new Error('no store');
    ({ store, dispose } = await target.open());
    api = await createTestApi(store);
    tight = await createTestApi(store, {
      configText: 'connections: { api: { headersTimeoutMs: 300, maxRequestsPerSocket: 2 } }\n',
    });
  });
  afterAll(async () => {
    await api.app.close();
    await tight.app.close();
    await dispose();
  });

  it('sets the head deadline, the idle keep-alive and the requests per connection on its node server', () => {
    const server = api.app.server;
    const defaults = DEFAULT_CONNECTION_LIMITS.api;
    expect([server.headersTimeout, server.keepAliveTimeout]).toEqual([
      defaults.headersTimeoutMs,
      defaults.keepAliveTimeoutMs,
    ]);
    expect(tight.app.server.maxRequestsPerSocket).toBe(2);
  });

  it('closes a connection that sends half a head once its deadline has passed', async () => {
    await tight.app.listen({ host: '127.0.0.1', port: 0 });
    const elapsed = await msUntilHalfHeadClosed((tight.app.server.address() as AddressInfo).port);
    expect(elapsed).toBeGreaterThanOrEqual(250);
    // The deadline, one check interval, and room for a loaded machine.
    expect(elapsed).toBeLessThan(300 + CONNECTIONS_CHECKING_INTERVAL_MS + 2_000);
  });
});
