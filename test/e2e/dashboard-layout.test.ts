/**
 * The dashboard's layout in a real Chromium, over the real API (in process, real HTTP on port 0, the built
 * dist/web): a chart with a single sample spans the 5 minutes that hold it, not the hour the history keeps nor
 * years, and 1 h when picked; the delete dialog of an endpoint with a 200-character name keeps its Cancel button
 * whole and inside the dialog, at a laptop's and a phone's width; an endpoint that had jobs gets the job charts; a
 * queue endpoint with idle tiers is made in the form and listed with its type; an endpoint whose worker is starting
 * says so where its charts and the list would say nothing. Each test leaves a screenshot in
 * test-results/dashboard-layout/ for review.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Worker } from '../../src/domain/worker.js';
import type { EndpointHistory } from '../../src/ports/traffic.js';
import type { Store } from '../../src/store/store.js';
import { createTestApi, originalClientCreateBody, type TestApi } from '../support/api.js';
import { chromiumAvailable, launchChromium } from '../support/browser.js';
import { storeTargets } from '../support/stores.js';

const SHOTS = fileURLToPath(new URL('../../test-results/dashboard-layout/', import.meta.url));
const DASHBOARD = fileURLToPath(new URL('../../dist/web/', import.meta.url));
const LONG_NAME = 'a-long-endpoint-name-'.repeat(10).slice(0, 200);

/** One sample, taken now: what a new endpoint's history holds at first. */
function oneSample(): EndpointHistory {
  return {
    intervalSeconds: 10,
    capacity: 360,
    at: [Date.now()],
    requests: { ok: [3], clientErrors: [0], serverErrors: [0] },
    latencyMs: { p50: [12], p99: [40] },
    queue: { depth: [0], oldestWaitMs: [0] },
    inFlight: [0],
    workers: { running: [1] },
    desiredWorkers: [1],
    coldStarts: { count: [0], meanMs: [null] },
    thaws: { count: [0], meanMs: [null] },
    restores: { count: [0], meanMs: [null] },
    jobs: {
      inQueue: [3],
      inProgress: [1],
      completed: [2],
      failed: [1],
      cancelled: [0],
      timedOut: [0],
      retried: [1],
      delayMs: { p50: [150], p95: [2_400] },
      executionMs: { p50: [4_000], p95: [8_000] },
    },
  };
}

/** A history with no sample yet: what an endpoint has before the first sample that sees its workers. */
function noSample(): EndpointHistory {
  const history = oneSample();
  return JSON.parse(JSON.stringify(history, (_key, value) => (Array.isArray(value) ? [] : value)));
}

/** A worker of owner A's endpoint, as the controller stores it. */
function storedWorker(
  id: string,
  endpointId: string,
  state: Worker['status']['state'],
  message: string,
): Worker {
  return {
    id,
    endpointId,
    ownerId: 'owner-a',
    revision: 1,
    status: { state, error: '', message },
    healthy: false,
    gpuUuids: [],
    address: null,
    createdAt: Date.now(),
    updatedAt: Date.now(),
    readyAt: null,
  };
}

describe.runIf(chromiumAvailable())('the dashboard layout in a real Chromium', () => {
  let api: TestApi;
  let dispose: () => Promise<void>;
  let browser: Browser;
  let base: string;
  let endpointId: string;
  let store: Store;
  /** Endpoints whose history has no sample yet. */
  const unsampled = new Set<string>();

  beforeAll(async () => {
    if (!existsSync(join(DASHBOARD, 'index.html')))
      throw new Error(`no dashboard in ${DASHBOARD}: npm run build`);
    const [sqlite] = storeTargets();
    if (!sqlite) throw new Error('no store target');
    const opened = await sqlite.open();
    dispose = opened.dispose;
    store = opened.store;
    api = await createTestApi(opened.store, {
      dashboardDir: DASHBOARD,
      history: { of: (id) => (unsampled.has(id) ? noSample() : oneSample()), recent: () => undefined },
    });
    base = await api.app.listen({ port: 0, host: '127.0.0.1' });
    const created = await api.call('POST', 'endpoint/create', originalClientCreateBody({ name: LONG_NAME }));
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    endpointId = created.body.id;
    browser = await launchChromium();
    mkdirSync(SHOTS, { recursive: true });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await api?.app.close();
    await dispose?.();
  });

  /** A page at `width` x `height`, signed in, showing the Endpoints list. */
  async function signedIn(width: number, height: number): Promise<Page> {
    const page = await browser.newPage({ viewport: { width, height } });
    await page.goto(`${base}/ui/`);
    await page.getByLabel('API key').fill(api.keyA);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Endpoints' }).waitFor();
    return page;
  }

  /** A page at `width` x `height`, signed in, showing the endpoint (`id`, else the one with the long name). */
  async function endpointPage(width: number, height: number, id = endpointId): Promise<Page> {
    const page = await signedIn(width, height);
    await page.goto(`${base}/ui/#/endpoints/${id}`);
    await page.getByRole('button', { name: 'Delete', exact: true }).waitFor();
    return page;
  }

  it('spans the 5 minutes that hold a single sample, ending at it, and the hour when 1 h is picked', async () => {
    const page = await endpointPage(1280, 800);
    const plot = page.locator('.chart[data-chart="requests"] .uplot');
    // Both ends read at once: the chart redraws each poll, and two reads could straddle a redraw.
    const span = () =>
      plot.evaluate((el) => Number(el.getAttribute('data-x-max')) - Number(el.getAttribute('data-x-min')));
    await expect.poll(() => plot.getAttribute('data-x-max'), { timeout: 10_000 }).not.toBeNull();
    expect(await span()).toBe(300);
    const max = Number(await plot.getAttribute('data-x-max'));
    expect(Math.abs(max - Date.now() / 1000)).toBeLessThan(60);
    const range = page.getByRole('group', { name: 'Time range' });
    expect(await range.getByRole('button', { name: '5 min' }).getAttribute('aria-pressed')).toBe('true');
    expect(await page.locator('#charts-title').textContent()).toContain('the last 5 min');
    // The history keeps an hour: 24 h would draw that hour on a longer axis, and says so.
    expect(await range.getByRole('button', { name: '24 h' }).isDisabled()).toBe(true);
    expect(await page.locator('.range-picker').textContent()).toContain(
      '24 h: this server keeps 1 h of history',
    );
    await range.getByRole('button', { name: '1 h' }).click();
    await expect.poll(span).toBe(3600);
    expect(await range.getByRole('button', { name: '1 h' }).getAttribute('aria-pressed')).toBe('true');
    // A poll later the picked range holds: the page does not fall back to the one that fits.
    await page.waitForResponse((r) => r.url().includes('endpoint/metrics/history'));
    expect(await span()).toBe(3600);
    await page
      .locator('section[aria-labelledby="charts-title"]')
      .screenshot({ path: join(SHOTS, 'chart.png') });
    await page.close();
  });

  it('draws the job charts of an endpoint that had jobs, each saying its latest values', async () => {
    const page = await endpointPage(1280, 800);
    const caption = (id: string) => page.locator(`.chart[data-chart="${id}"] figcaption .summary`);
    await caption('jobs').waitFor({ timeout: 10_000 });
    expect(await caption('jobs').textContent()).toBe(
      'now 3 in the queue, 1 in progress; at most 3 queued in the chart',
    );
    expect(await caption('jobs-finished').textContent()).toContain('3 jobs finished in the chart');
    expect(await caption('job-times').textContent()).toBe(
      'latest delay p50 150 ms, p95 2.4 s; execution p50 4.0 s, p95 8.0 s',
    );
    expect(await page.locator('.chart[data-chart="job-times"] .uplot').count()).toBe(1);
    await page
      .locator('.chart[data-chart="jobs-finished"]')
      .screenshot({ path: join(SHOTS, 'jobs-finished-chart.png') });
    await page.close();
  });

  it.each([
    ['laptop', 1280, 800],
    ['phone', 390, 844],
  ])(
    'keeps Cancel whole and inside the delete dialog with a 200-character name (%s)',
    async (viewport, width, height) => {
      const page = await endpointPage(width, height);
      await page.getByRole('button', { name: 'Delete', exact: true }).click();
      const dialog = page.getByRole('dialog');
      await dialog.waitFor();
      const cancel = dialog.getByRole('button', { name: 'Cancel' });
      const confirm = dialog.getByRole('button', { name: `Delete ${LONG_NAME}` });
      const box = await dialog.boundingBox();
      const cancelBox = await cancel.boundingBox();
      const confirmBox = await confirm.boundingBox();
      if (!box || !cancelBox || !confirmBox) throw new Error('not laid out');
      for (const inner of [cancelBox, confirmBox]) {
        expect(inner.x).toBeGreaterThanOrEqual(box.x);
        expect(inner.x + inner.width).toBeLessThanOrEqual(box.x + box.width);
        expect(inner.x + inner.width).toBeLessThanOrEqual(width);
      }
      // Cancel shows its whole label: nothing of it is cut.
      expect(await cancel.evaluate((b) => b.scrollWidth <= b.clientWidth)).toBe(true);
      // Neither does the title or the text overflow the dialog.
      expect(await dialog.evaluate((d) => d.scrollWidth <= d.clientWidth)).toBe(true);
      await page.screenshot({ path: join(SHOTS, `delete-dialog-${viewport}.png`) });
      await page.keyboard.press('Escape');
      await page.close();
    },
  );

  it('makes a queue endpoint with idle tiers in the form, the API refusing a bad tier beside its field, and lists it with its type', async () => {
    const page = await signedIn(1280, 800);
    await page.getByRole('link', { name: 'New endpoint' }).click();
    await page.getByLabel('Name', { exact: true }).fill('queue-tiers');
    await page.getByLabel('Image', { exact: true }).fill('runpod/handler:1');
    await page.getByLabel('Type', { exact: true }).selectOption('queue');
    await page.getByLabel('Keep frozen (s)').fill('-5');
    await page.getByLabel('Keep suspended (s)').fill('3600');
    await page.getByRole('button', { name: 'Create endpoint' }).click();
    const error = page.locator('[data-field-error="keepFrozen"]');
    await error.waitFor();
    expect(await error.textContent()).toMatch(/keepFrozen/);
    expect(await page.getByLabel('Keep frozen (s)').getAttribute('aria-invalid')).toBe('true');

    await page.getByLabel('Keep frozen (s)').fill('600');
    await page.getByRole('button', { name: 'Create endpoint' }).click();
    await page.getByRole('heading', { name: 'queue-tiers' }).waitFor();
    const id = decodeURIComponent(new URL(page.url()).hash.split('/')[2] ?? '');
    const stored = (await api.call('GET', `endpoint?id=${id}`)).body.endpoint;
    expect(stored.type).toBe('queue');
    expect(stored.workerConfig).toMatchObject({ keepFrozen: 600, keepSuspended: 3600 });
    // No health path named: a queue worker's polls are its health (docs/jobs.md).
    expect(stored.healthy.path).toBe('');

    await page.goto(`${base}/ui/#/endpoints`);
    const row = page.locator(`tr[data-endpoint="${id}"]`);
    await row.waitFor();
    expect(await row.locator('td.type').textContent()).toBe('queue');
    await page.screenshot({ path: join(SHOTS, 'list-with-type.png') });
    await page.goto(`${base}/ui/#/endpoints/${id}/edit`);
    expect(await page.getByLabel('Type', { exact: true }).inputValue()).toBe('queue');
    expect(await page.getByLabel('Keep frozen (s)').inputValue()).toBe('600');
    await page.close();
  });

  it('says a worker is starting, not "no workers", where the charts have no sample yet, and the cause in the list', async () => {
    const created = await api.call(
      'POST',
      'endpoint/create',
      originalClientCreateBody({ name: 'starting-one' }),
    );
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const id: string = created.body.id;
    unsampled.add(id);
    const cause = 'health check GET /health answered 404 Not Found (3 in a row)';
    await store.workers.upsert(storedWorker('w-starting', id, 'starting', cause));
    await store.workers.upsert(storedWorker('w-frozen', id, 'frozen', 'frozen since 09:40 (idle)'));

    const page = await endpointPage(1280, 800, id);
    const empty = page.getByTestId('charts-empty');
    await empty.waitFor();
    const said = (await empty.textContent()) ?? '';
    expect(said).toContain(`1 worker starting: ${cause}`);
    expect(said).toContain('1 worker frozen');
    expect(said).not.toMatch(/no workers|no traffic/);
    // The frozen worker is shown as frozen, and counted apart from the ready ones.
    expect(await page.locator('tr[data-worker="w-frozen"] .badge').textContent()).toBe('frozen');
    expect(await page.locator('.facts').textContent()).toContain('(1 frozen)');
    await page
      .locator('section[aria-labelledby="charts-title"]')
      .screenshot({ path: join(SHOTS, 'starting.png') });

    await page.goto(`${base}/ui/#/endpoints`);
    const row = page.locator(`tr[data-endpoint="${id}"]`);
    await row.waitFor();
    expect(await row.locator('.cause').textContent()).toBe(`worker w-starting: ${cause}`);
    await page.close();
  });
});
