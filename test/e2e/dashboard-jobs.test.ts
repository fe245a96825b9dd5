/**
 * The dashboard's Jobs section in a real Chromium (issue 22, item 9): `corral serve` (the built binary) on the local
 * runtime with a `queue` endpoint whose worker is the RunPod protocol test worker; jobs submitted on the gateway's
 * `/v2` routes show up in the section with their counts, a filter by status narrows the list, an opened job shows
 * its output and its error, and a queued job is cancelled and a failed one retried from its panel. An `http` endpoint's job shows the same way.
 * A queue endpoint made in the New-endpoint form (type and idle tiers) runs a job: the form names no health path
 * its handler would never answer.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  chromiumAvailable,
  keepFailedTest,
  openSuiteBrowser,
  type SuiteBrowser,
} from '../support/browser.js';
import { callJobs } from '../support/jobs-client.js';
import { callApi, localRuntimeArgs, type ServeProcess, startServe } from '../support/process.js';
import { WORKER_SCRIPT } from '../support/test-image.js';

const KEY = 'e2e-dashboard-jobs-operator-key-0123456789';
const WORKER = fileURLToPath(new URL('../fixtures/worker/runpod-worker.mjs', import.meta.url));

describe.runIf(chromiumAvailable())("the dashboard's Jobs section in a real Chromium", () => {
  let dataDir: string;
  let server: ServeProcess | undefined;
  let at: SuiteBrowser | undefined;
  let page: Page;
  let endpointId = '';

  const jobs = (method: string, path: string, body?: unknown) =>
    callJobs(server?.gatewayUrl ?? '', KEY, { method, endpoint: endpointId, path, body });
  const statusOf = async (id: string) => (await jobs('GET', `status/${id}`)).body.status as string;
  const waitForStatus = (id: string, status: string) =>
    vi.waitFor(async () => expect(await statusOf(id)).toBe(status), { timeout: 60_000, interval: 250 });
  const count = (status: string) => page.getByTestId(`jobs-count-${status}`).textContent();
  const rowOf = (id: string) => page.locator(`tr[data-job="${id}"]`);

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'corral-dashboard-jobs-e2e-'));
    server = await startServe(localRuntimeArgs('h100-80g:2'), {
      CORRAL_DATA_DIR: dataDir,
      CORRAL_API_KEY: KEY,
    });
    at = await openSuiteBrowser();
    page = at.page;
  }, 60_000);

  afterEach((test) => keepFailedTest({ suite: 'dashboard-jobs', test, at, server }));

  afterAll(async () => {
    await at?.browser.close();
    if (server) {
      await callApi(server, KEY, 'endpoint/delete', { id: endpointId }).catch(() => undefined);
      await server.stop();
    }
    rmSync(dataDir, { recursive: true, force: true });
  }, 60_000);

  it('shows submitted jobs with their counts, filters them, opens one, cancels a queued one and retries a failed one', async () => {
    if (!server) throw new Error('no server');
    // One worker taking one job at a time: a long job holds it, so the next one stays queued.
    const created = await callApi(server, KEY, 'endpoint/create', {
      endpoint: {
        name: 'jobs-ui',
        type: 'queue',
        workerConfig: { minNum: 0, maxNum: 1, freeTimeout: 300, maxConcurrent: 1, gpuNum: 1 },
        image: { image: 'runpod-worker:local', command: `'${process.execPath}' '${WORKER}'` },
        envs: [{ key: 'RUNPOD_PING_INTERVAL', value: '1000' }],
      },
    });
    expect(created.status, created.text).toBe(200);
    endpointId = created.body.id;

    const done = (await jobs('POST', 'run', { input: { n: 'shown-output' } })).body.id as string;
    await waitForStatus(done, 'COMPLETED');
    const failed = (await jobs('POST', 'run', { input: { error: 'the handler gave up' } })).body.id as string;
    await waitForStatus(failed, 'FAILED');
    const long = (await jobs('POST', 'run', { input: { sleepMs: 120_000 } })).body.id as string;
    await waitForStatus(long, 'IN_PROGRESS');
    const queued = (await jobs('POST', 'run', { input: { n: 'waits' } })).body.id as string;
    expect(await statusOf(queued)).toBe('IN_QUEUE');

    await page.goto(`${server.apiUrl}/ui/`);
    await page.getByLabel('API key').fill(KEY);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Endpoints' }).waitFor();
    await page.goto(`${server.apiUrl}/ui/#/endpoints/${endpointId}`);
    await page.getByRole('heading', { name: 'Jobs', exact: true }).waitFor();

    // The counts and the rows, from the page's poll.
    await expect.poll(() => count('COMPLETED'), { timeout: 15_000 }).toBe('1');
    expect([await count('FAILED'), await count('IN_PROGRESS'), await count('IN_QUEUE')]).toEqual([
      '1',
      '1',
      '1',
    ]);
    for (const id of [done, failed, long, queued]) await rowOf(id).waitFor();
    expect(await rowOf(done).locator('.badge').textContent()).toBe('completed');
    expect(await rowOf(long).locator('[data-label="Worker"]').textContent()).not.toBe('-');

    // The filter narrows the list to one status.
    await page.getByLabel('Show jobs of status').selectOption('COMPLETED');
    await expect.poll(() => page.locator('tr[data-job]').count(), { timeout: 15_000 }).toBe(1);
    await rowOf(done).waitFor();
    await page.getByLabel('Show jobs of status').selectOption('');
    await expect.poll(() => page.locator('tr[data-job]').count(), { timeout: 15_000 }).toBe(4);

    // One job opened: its input and output; a failed one: its error, and retry offered, not cancel.
    await page.getByRole('button', { name: `Open job ${done}` }).click();
    const panel = page.getByTestId('job-panel');
    await expect
      .poll(() => panel.getByTestId('job-output').textContent(), { timeout: 15_000 })
      .toContain('"shown-output"');
    expect(await panel.getByTestId('job-input').textContent()).toContain('"n": "shown-output"');
    expect(await panel.getByRole('button', { name: 'Cancel job' }).count()).toBe(0);
    await page.getByRole('button', { name: `Open job ${failed}` }).click();
    await expect
      .poll(() => panel.getByTestId('job-error').textContent(), { timeout: 15_000 })
      .toContain('the handler gave up');
    expect(await panel.getByRole('button', { name: 'Retry job' }).count()).toBe(1);

    // The queued job cancelled from its panel: the API says CANCELLED, and so does the section.
    await page.getByRole('button', { name: `Open job ${queued}` }).click();
    await panel.getByRole('button', { name: 'Cancel job' }).click();
    await expect.poll(() => statusOf(queued), { timeout: 15_000 }).toBe('CANCELLED');
    await expect
      .poll(() => panel.getByTestId('job-status').textContent(), { timeout: 15_000 })
      .toBe('cancelled');
    await expect.poll(() => count('CANCELLED'), { timeout: 15_000 }).toBe('1');
    expect(await count('IN_QUEUE')).toBe('0');
    expect(await panel.getByRole('button', { name: 'Cancel job' }).count()).toBe(0);

    // The failed job retried from its panel: queued again (behind the long job, on the one worker).
    await page.getByRole('button', { name: `Open job ${failed}` }).click();
    await panel.getByRole('button', { name: 'Retry job' }).click();
    await expect.poll(() => statusOf(failed), { timeout: 15_000 }).toBe('IN_QUEUE');
    await expect
      .poll(() => panel.getByTestId('job-status').textContent(), { timeout: 15_000 })
      .toBe('in queue');
    await expect.poll(() => count('FAILED'), { timeout: 15_000 }).toBe('0');
    expect(await panel.getByRole('button', { name: 'Retry job' }).count()).toBe(0);

    // The long job too (its worker is told through the stop channel), so that nothing runs on after the test.
    expect((await jobs('POST', `cancel/${long}`)).body.status).toBe('CANCELLED');
  }, 180_000);

  it("shows an http endpoint's job, delivered as POST {jobsPath}, with its output", async () => {
    if (!server) throw new Error('no server');
    const created = await callApi(server, KEY, 'endpoint/create', {
      endpoint: {
        name: 'jobs-ui-http',
        jobsPath: '/echo',
        ports: [{ port: 8000 }],
        workerConfig: { minNum: 0, maxNum: 1, freeTimeout: 300, maxConcurrent: 4, gpuNum: 1 },
        image: { image: 'plain-worker:local', command: `'${process.execPath}' '${WORKER_SCRIPT}'` },
      },
    });
    expect(created.status, created.text).toBe(200);
    const httpId = created.body.id as string;
    try {
      const sync = await callJobs(server.gatewayUrl, KEY, {
        method: 'POST',
        endpoint: httpId,
        path: 'runsync?wait=60000',
        body: { input: { prompt: 'from-http' } },
      });
      expect(sync.body).toMatchObject({ status: 'COMPLETED', output: { prompt: 'from-http' } });
      await page.goto(`${server.apiUrl}/ui/#/endpoints/${httpId}`);
      await expect.poll(() => count('COMPLETED'), { timeout: 15_000 }).toBe('1');
      await page.getByRole('button', { name: `Open job ${sync.body.id}` }).click();
      const panel = page.getByTestId('job-panel');
      await expect
        .poll(() => panel.getByTestId('job-output').textContent(), { timeout: 15_000 })
        .toContain('"prompt": "from-http"');
    } finally {
      await callApi(server, KEY, 'endpoint/delete', { id: httpId });
    }
  }, 120_000);

  it('runs a job on a queue endpoint made in the New-endpoint form with idle tiers, its workers probed by their polls alone', async () => {
    if (!server) throw new Error('no server');
    await page.goto(`${server.apiUrl}/ui/#/endpoints/new`);
    await page.getByLabel('Name', { exact: true }).fill('jobs-form-queue');
    await page.getByLabel('Image', { exact: true }).fill('runpod-worker:local');
    await page.getByLabel('Type', { exact: true }).selectOption('queue');
    await page.getByLabel('Command').fill(`'${process.execPath}' '${WORKER}'`);
    await page.getByLabel('Environment variables').fill('RUNPOD_PING_INTERVAL=1000');
    await page.getByLabel('Keep frozen (s)').fill('600');
    await page.getByRole('button', { name: 'Create endpoint' }).click();
    await page.getByRole('heading', { name: 'jobs-form-queue' }).waitFor();
    const id = decodeURIComponent(new URL(page.url()).hash.split('/')[2] ?? '');
    try {
      // A /health probe the handler never answers would keep its worker starting: the job would time out.
      const sync = await callJobs(server.gatewayUrl, KEY, {
        method: 'POST',
        endpoint: id,
        path: 'runsync?wait=60000',
        body: { input: { n: 'from-the-form' } },
      });
      expect(sync.body).toMatchObject({ status: 'COMPLETED' });
      const stored = (await callApi(server, KEY, `endpoint?id=${id}`)).body.endpoint;
      expect(stored).toMatchObject({
        type: 'queue',
        workerConfig: { keepFrozen: 600 },
        healthy: { path: '' },
      });
      await page.goto(`${server.apiUrl}/ui/#/endpoints`);
      const row = page.locator(`tr[data-endpoint="${id}"]`);
      await row.waitFor();
      expect(await row.locator('td.type').textContent()).toBe('queue');
    } finally {
      await callApi(server, KEY, 'endpoint/delete', { id });
    }
  }, 120_000);
});
