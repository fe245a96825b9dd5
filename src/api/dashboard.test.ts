import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApi, type TestApi } from '../../test/support/api.js';
import { storeTargets } from '../../test/support/stores.js';
import { loadDashboard } from './dashboard.js';

describe('the dashboard routes', () => {
  let dir: string;
  let api: TestApi;
  let dispose: () => Promise<void>;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'corral-dashboard-'));
    writeFileSync(join(dir, 'index.html'), '<!doctype html><title>Corral</title>');
    writeFileSync(join(dir, 'app.js'), `console.log(${JSON.stringify('x'.repeat(2000))});`);
    writeFileSync(join(dir, 'app.css'), 'body{}');
    writeFileSync(join(dir, 'notes.txt'), 'not served');
    const target = storeTargets()[0];
    if (!target) throw new Error('no store target');
    const opened = await target.open();
    dispose = opened.dispose;
    api = await createTestApi(opened.store, { dashboardDir: dir });
  });
  afterAll(async () => {
    await api.app.close();
    await dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  it('sends / to /ui/, which serves index.html without a key', async () => {
    const root = await api.app.inject({ method: 'GET', url: '/' });
    expect(root.statusCode).toBe(302);
    expect(root.headers.location).toBe('/ui/');
    const page = await api.app.inject({ method: 'GET', url: '/ui/' });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.body).toContain('<title>Corral</title>');
    expect(page.headers['content-security-policy']).toContain("default-src 'self'");
    expect(page.headers['x-content-type-options']).toBe('nosniff');
    expect((await api.app.inject({ method: 'GET', url: '/ui' })).headers.location).toBe('/ui/');
  });

  it('serves the script and stylesheet with their types, gzipped when asked, 304 for a known ETag', async () => {
    const plain = await api.app.inject({ method: 'GET', url: '/ui/app.js' });
    expect(plain.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(plain.headers['content-encoding']).toBeUndefined();
    const gzipped = await api.app.inject({
      method: 'GET',
      url: '/ui/app.js',
      headers: { 'accept-encoding': 'gzip, br' },
    });
    expect(gzipped.headers['content-encoding']).toBe('gzip');
    expect(gzipped.rawPayload.length).toBeLessThan(plain.rawPayload.length);
    expect(gunzipSync(gzipped.rawPayload).toString()).toBe(plain.body);
    const again = await api.app.inject({
      method: 'GET',
      url: '/ui/app.js',
      headers: { 'if-none-match': String(plain.headers.etag) },
    });
    expect(again.statusCode).toBe(304);
    expect(again.body).toBe('');
    const css = await api.app.inject({ method: 'GET', url: '/ui/app.css' });
    expect(css.headers['content-type']).toBe('text/css; charset=utf-8');
  });

  it('serves nothing but the built files: no other type, no path out of the folder', async () => {
    for (const url of ['/ui/notes.txt', '/ui/missing.js', '/ui/..%2Fpackage.json', '/ui/../package.json']) {
      const response = await api.app.inject({ method: 'GET', url });
      expect(response.statusCode, url).toBe(404);
      expect(response.json().reason, url).toBe('ROUTE_NOT_FOUND');
    }
  });

  it('says how to build it where it was not built', async () => {
    expect(loadDashboard(join(dir, 'nowhere'))).toBeUndefined();
    const target = storeTargets()[0];
    if (!target) throw new Error('no store target');
    const opened = await target.open();
    const bare = await createTestApi(opened.store, { dashboardDir: join(dir, 'nowhere') });
    try {
      const response = await bare.app.inject({ method: 'GET', url: '/ui/' });
      expect(response.statusCode).toBe(404);
      expect(response.json().message).toContain('npm run build');
    } finally {
      await bare.app.close();
      await opened.dispose();
    }
  });
});
