/**
 * The dashboard's layout in a real Chromium, over the real API (in process, real HTTP on port 0, the built
 * dist/web): a chart with a single sample spans the hour the history keeps, not years; the delete dialog of an
 * endpoint with a 200-character name keeps its Cancel button whole and inside the dialog, at a laptop's and a
 * phone's width; an endpoint that had jobs gets the job charts. Each test leaves a screenshot in test-results/dashboard-layout/ for review.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EndpointHistory } from '../../src/ports/traffic.js';
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

describe.runIf(chromiumAvailable())('the dashboard layout in a real Chromium', () => {
  let api: TestApi;
  let dispose: () => Promise<void>;
  let browser: Browser;
  let base: string;
  let endpointId: string;

  beforeAll(async () => {
    if (!existsSync(join(DASHBOARD, 'index.html')))
      throw new Error(`no dashboard in ${DASHBOARD}: npm run build`);
    const [sqlite] = storeTargets();
    if (!sqlite) throw new Error('no store target');
    const opened = await sqlite.open();
    dispose = opened.dispose;
    api = await createTestApi(opened.store, {
      dashboardDir: DASHBOARD,
      history: { of: () => oneSample(), recent: () => undefined },
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

  /** A page at `width` x `height`, signed in, showing the endpoint. */
  async function endpointPage(width: number, height: number): Promise<Page> {
    const page = await browser.newPage({ viewport: { width, height } });
    await page.goto(`${base}/ui/`);
    await page.getByLabel('API key').fill(api.keyA);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Endpoints' }).waitFor();
    await page.goto(`${base}/ui/#/endpoints/${endpointId}`);
    await page.getByRole('button', { name: 'Delete', exact: true }).waitFor();
    return page;
  }

  it('spans the hour the history keeps with a single sample, ending at it', async () => {
    const page = await endpointPage(1280, 800);
    const plot = page.locator('.chart[data-chart="requests"] .uplot');
    await expect.poll(() => plot.getAttribute('data-x-max'), { timeout: 10_000 }).not.toBeNull();
    const min = Number(await plot.getAttribute('data-x-min'));
    const max = Number(await plot.getAttribute('data-x-max'));
    expect(max - min).toBe(3600);
    expect(Math.abs(max - Date.now() / 1000)).toBeLessThan(60);
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
});
