import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApi, originalClientCreateBody, type TestApi } from '../../test/support/api.js';
import { storeTargets } from '../../test/support/stores.js';

const VALUE = 'hf_live_value_93c1e0';

describe.each(storeTargets())('secrets through the API on $name', (target) => {
  let api: TestApi;
  let opened: Awaited<ReturnType<typeof target.open>>;
  const responses: string[] = [];

  beforeAll(async () => {
    opened = await target.open();
    api = await createTestApi(opened.store);
  });
  afterAll(async () => {
    await api.app.close();
    await opened.dispose();
  });

  const call = async (...args: Parameters<TestApi['call']>) => {
    const response = await api.call(...args);
    responses.push(JSON.stringify(response.body));
    return response;
  };
  const withEnv = (value: string) => originalClientCreateBody({ envs: [{ key: 'HF_TOKEN', value }] });

  it('saves, replaces and lists secrets by name and time, never with their value', async () => {
    expect((await call('POST', 'secret/save', { name: 'hf', value: 'first' })).body).toEqual({
      name: 'hf',
      replaced: false,
    });
    expect((await call('POST', 'secret/save', { name: 'hf', value: VALUE })).body).toEqual({
      name: 'hf',
      replaced: true,
    });
    const listed = await call('GET', 'secrets');
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual({
      secrets: [{ name: 'hf', createdAt: expect.any(String), updatedAt: expect.any(String) }],
    });
  });

  it('stores the value sealed: the database does not hold it', async () => {
    const rows = await sql<{ secret: string }>`select secret from secrets`.execute(opened.db);
    expect(rows.rows).toHaveLength(1);
    expect(rows.rows[0]?.secret).toMatch(/^v1:/);
    expect(JSON.stringify(rows.rows)).not.toContain(VALUE);
  });

  it('keeps owners apart: another owner neither lists, deletes nor references the secret', async () => {
    expect((await call('GET', 'secrets', undefined, api.keyB)).body).toEqual({ secrets: [] });
    const deleted = await call('POST', 'secret/delete', { name: 'hf' }, api.keyB);
    expect(deleted.status).toBe(404);
    expect(deleted.body.reason).toBe('SECRET_NOT_FOUND');
    const created = await call('POST', 'endpoint/create', withEnv('{{ CORRAL_SECRET_hf }}'), api.keyB);
    expect(created.status).toBe(400);
    expect(created.body.reason).toBe('UNKNOWN_SECRET');
  });

  it('refuses a reference to a missing secret at create and update, naming the env and the secret', async () => {
    const created = await call('POST', 'endpoint/create', withEnv('Bearer {{CORRAL_SECRET_nope}}'));
    expect(created.status).toBe(400);
    expect(created.body).toMatchObject({
      reason: 'UNKNOWN_SECRET',
      message: expect.stringContaining('environment variable HF_TOKEN references secret "nope"'),
      metadata: { field: 'envs.0.value', env: 'HF_TOKEN', secret: 'nope' },
    });
    const ok = await call('POST', 'endpoint/create', withEnv('{{ CORRAL_SECRET_hf }}'));
    expect(ok.status).toBe(200);
    const update = await call('POST', 'endpoint/update', {
      id: ok.body.id,
      envs: [{ key: 'HF_TOKEN', value: '{{ CORRAL_SECRET_other }}' }],
    });
    expect(update.status).toBe(400);
    expect(update.body.metadata).toMatchObject({ env: 'HF_TOKEN', secret: 'other' });
  });

  it('an endpoint shows the reference, not the value; a secret in use cannot be deleted until it is not', async () => {
    const { body } = await call('GET', 'endpoints');
    const endpoint = body.endpoints.find((e: any) => e.envs.length > 0);
    expect(endpoint.envs).toEqual([{ key: 'HF_TOKEN', value: '{{ CORRAL_SECRET_hf }}' }]);
    const refused = await call('POST', 'secret/delete', { name: 'hf' });
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ reason: 'SECRET_IN_USE', metadata: { endpoints: [endpoint.id] } });
    expect((await call('POST', 'endpoint/delete', { id: endpoint.id })).status).toBe(200);
    expect((await call('POST', 'secret/delete', { name: 'hf' })).body).toEqual({});
    expect((await call('GET', 'secrets')).body).toEqual({ secrets: [] });
  });

  it('validates names and values', async () => {
    for (const body of [
      { name: 'has space', value: 'x' },
      { name: '', value: 'x' },
      { name: 'x'.repeat(65), value: 'x' },
      { name: 'ok', value: '' },
      { name: 'ok', value: 'x'.repeat(32 * 1024 + 1) },
      { name: 'ok' },
    ]) {
      const answer = await call('POST', 'secret/save', body);
      expect(answer.status, JSON.stringify(body).slice(0, 40)).toBe(400);
      expect(answer.body.reason).toBe('INVALID_FIELD');
    }
  });

  it('no answer ever held the value', () => {
    expect(responses.join('\n')).not.toContain(VALUE);
  });
});
