// Who may read /metrics (it names every endpoint): an admin key or the configured scrape token, nobody else.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApi, type TestApi } from '../../test/support/api.js';
import { storeTargets } from '../../test/support/stores.js';
import { ApiKeyService } from '../service/api-key-service.js';

const TOKEN = 'scrape-token-0123456789';

describe('/metrics', () => {
  let api: TestApi;
  let bare: TestApi;
  let adminKey: string;
  let dispose: () => Promise<void>;

  beforeAll(async () => {
    const target = storeTargets()[0];
    if (!target) throw new Error('no store target');
    const opened = await target.open();
    dispose = opened.dispose;
    api = await createTestApi(opened.store, { flags: { metricsToken: TOKEN } });
    bare = await createTestApi(opened.store);
    const keys = new ApiKeyService({ store: opened.store, clock: () => Date.now() });
    adminKey = (await keys.create({ ownerId: 'ops', name: 'ops', admin: true })).key;
  });
  afterAll(async () => {
    await api.app.close();
    await bare.app.close();
    await dispose();
  });

  const scrape = (app: TestApi, authorization?: string) =>
    app.app.inject({ method: 'GET', url: '/metrics', headers: authorization ? { authorization } : {} });

  it('answers 401 with WWW-Authenticate: Bearer without a key, to a non-admin key and to a wrong token', async () => {
    for (const authorization of [undefined, `Bearer ${api.keyA}`, `Bearer ${TOKEN}x`, 'Bearer short']) {
      const answer = await scrape(api, authorization);
      expect(answer.statusCode, authorization).toBe(401);
      expect(answer.headers['www-authenticate']).toBe('Bearer');
      expect(answer.json()).toMatchObject({ reason: 'UNAUTHENTICATED' });
    }
    expect((await scrape(api)).json().message).toContain('--metrics-token');
  });

  it('serves the scrape token and an admin key, with the API request counts', async () => {
    await api.call('GET', 'endpoints');
    const byToken = await scrape(api, `Bearer ${TOKEN}`);
    expect(byToken.statusCode).toBe(200);
    expect(byToken.body).toMatch(
      /corral_api_requests_total\{route="\/gpu-instance\/openapi\/v1\/endpoints",method="GET",status="200"\} \d+/,
    );
    expect((await scrape(api, `Bearer ${adminKey}`)).statusCode).toBe(200);
  });

  it('takes admin keys only when no token is configured', async () => {
    expect((await scrape(bare, `Bearer ${TOKEN}`)).statusCode).toBe(401);
    expect((await scrape(bare, `Bearer ${adminKey}`)).statusCode).toBe(200);
    expect((await scrape(bare)).json().message).not.toContain('--metrics-token');
  });
});
