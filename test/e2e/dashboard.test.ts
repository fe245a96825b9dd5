import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { chromiumAvailable, launchChromium, saveFailure, watchConsole } from '../support/browser.js';
import {
  callApi,
  localRuntimeArgs,
  printServeLog,
  type ServeProcess,
  startServe,
} from '../support/process.js';
import { WORKER_SCRIPT } from '../support/test-image.js';

const OPERATOR_KEY = 'e2e-dashboard-operator-key-0123456789';
/** Where a failed test leaves its screenshot and the page's console log. */
const FAILURES = fileURLToPath(new URL('../../test-results/dashboard/', import.meta.url));
const NAME = 'web-e2e';
/** Corral's RunPod protocol test worker, a queue endpoint's worker on the local runtime. */
const RUNPOD_WORKER = fileURLToPath(new URL('../fixtures/worker/runpod-worker.mjs', import.meta.url));
const SLOW = 45_000;

describe.runIf(chromiumAvailable())('the dashboard in a real Chromium', () => {
  let dataDir: string;
  let server: ServeProcess | undefined;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let consoleLog: () => string;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'corral-dashboard-e2e-'));
    // The local runtime runs the test worker as a process: a real worker, a real log, no Docker needed.
    server = await startServe(localRuntimeArgs('h100-80g:2'), {
      CORRAL_DATA_DIR: dataDir,
      CORRAL_API_KEY: OPERATOR_KEY,
    });
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    page = await context.newPage();
    consoleLog = watchConsole(page);
  }, 60_000);

  afterEach(async (test) => {
    if (test.task.result?.state !== 'fail') return;
    const shot = await saveFailure(page, consoleLog(), FAILURES, test.task.name);
    process.stderr.write(`dashboard test failed: screenshot ${shot}, console log beside it\n`);
    printServeLog(server, 60);
  });

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const stateOf = () => page.getByTestId('endpoint-state').locator('.badge');
  /** The appName of the endpoint the page shows. */
  const shownAppName = async (): Promise<string> => {
    const id = decodeURIComponent(new URL(page.url()).hash.split('/')[2] ?? '');
    return (await callApi(server as ServeProcess, OPERATOR_KEY, `endpoint?id=${id}`)).body.endpoint.appName;
  };
  /** One request through the gateway (the endpoint is not public: the key goes with it); its status. */
  const invoke = async (appName: string, path: string) => {
    const response = await fetch(`${server?.gatewayUrl}/e/${appName}${path}`, {
      headers: { authorization: `Bearer ${OPERATOR_KEY}` },
    });
    await response.text();
    return response.status;
  };

  it('serves the page at / and refuses a wrong key with the reason', async () => {
    await page.goto(`${server?.apiUrl}/`);
    expect(page.url()).toBe(`${server?.apiUrl}/ui/`);
    await page.getByLabel('API key').fill('sk_not_a_key');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/refused the key/);
    expect(await page.getByRole('heading', { name: 'Endpoints' }).count()).toBe(0);
  });

  it('signs in, and a key refused later sends back to sign-in with the reason', async () => {
    await page.getByLabel('API key').fill(OPERATOR_KEY);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Endpoints' }).waitFor();
    expect(await page.evaluate("sessionStorage.getItem('corral.apiKey')")).toBe(OPERATOR_KEY);

    await page.evaluate("sessionStorage.setItem('corral.apiKey', 'sk_revoked_meanwhile')");
    await page.reload();
    await page.getByLabel('API key').waitFor();
    await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/refused the key/);
    expect(await page.evaluate("sessionStorage.getItem('corral.apiKey')")).toBeNull();
    await page.getByLabel('API key').fill(OPERATOR_KEY);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Endpoints' }).waitFor();
  });

  it('shows the error the API answers beside the field it names', async () => {
    await page.getByRole('link', { name: 'New endpoint' }).click();
    await page.getByLabel('Image').fill('local/worker:1');
    await page.getByLabel('Most workers').fill('999');
    await page.getByRole('button', { name: 'Create endpoint' }).click();
    const error = page.locator('[data-field-error="maxNum"]');
    await error.waitFor();
    expect(await error.textContent()).toMatch(/maxNum/);
    // Beside its field, and the field says it is invalid and takes the focus.
    const field = page.getByLabel('Most workers');
    expect(await field.getAttribute('aria-invalid')).toBe('true');
    expect(await field.evaluate((el) => el === (globalThis as any).document.activeElement)).toBe(true);
    expect(await page.locator('.field.invalid').count()).toBe(1);
  });

  it(
    'creates an endpoint through the form and shows it serving, with its worker, without a reload',
    async () => {
      await page.getByLabel('Name', { exact: true }).fill(NAME);
      await page.getByLabel('Most workers').fill('1');
      await page.getByLabel('Fewest workers').fill('1');
      await page.getByLabel('Command').fill(`'${process.execPath}' '${WORKER_SCRIPT}'`);
      await page.getByLabel(/^h100-80g/).check();
      await page.getByRole('button', { name: 'Create endpoint' }).click();
      await page.getByRole('heading', { name: NAME }).waitFor();
      const url = page.url();
      await expect.poll(() => stateOf().textContent(), { timeout: SLOW }).toBe('serving');
      const worker = page.locator('tr[data-worker]');
      await expect.poll(() => worker.locator('.badge').textContent(), { timeout: SLOW }).toBe('running');
      expect(page.url()).toBe(url);
      // The event timeline has the creation and the state change.
      await expect.poll(() => page.locator('.timeline li[data-type="created"]').count()).toBe(1);
      await expect.poll(() => page.locator('.timeline li[data-type="state"]').count()).toBeGreaterThan(0);
    },
    SLOW + 15_000,
  );

  it('follows the worker log live', async () => {
    await page.getByRole('button', { name: /^Follow the log of worker/ }).click();
    // The test worker logs each request, the controller's health probes included.
    await expect
      .poll(() => page.locator('pre.log').textContent(), { timeout: 20_000 })
      .toMatch(/GET \/health 200/);
  }, 30_000);

  it(
    'sends requests and sees the charts move',
    async () => {
      // The worker serving: the history samples it (every 10 s) and the charts appear.
      const charts = page.locator('.charts');
      await charts.waitFor({ timeout: SLOW });
      expect(await page.locator('.chart').count()).toBe(5);
      const requestsIn = async () => Number(await charts.getAttribute('data-requests'));
      const pointsIn = async () => Number(await charts.getAttribute('data-samples'));
      const before = { requests: await requestsIn(), points: await pointsIn() };
      const appName = await shownAppName();
      for (let i = 0; i < 20; i++) expect(await invoke(appName, '/work?ms=5')).toBe(200);
      for (let i = 0; i < 3; i++) expect(await invoke(appName, '/no-such-path')).toBe(404);
      // The next sample has them: the requests drawn grow by 23, the latency chart says its latest values.
      await expect.poll(requestsIn, { timeout: SLOW }).toBeGreaterThanOrEqual(before.requests + 23);
      expect(await pointsIn()).toBeGreaterThan(before.points);
      const latency = page.locator('.chart[data-chart="latency"] .summary');
      expect(await latency.textContent()).toMatch(/^latest p50 [\d.]+ m?s, p99 [\d.]+ m?s$/);
      const requests = page.locator('.chart[data-chart="requests"]');
      expect(await requests.locator('canvas').count()).toBeGreaterThan(0);
      expect(await requests.locator('.summary').textContent()).toMatch(/requests in the chart/);
      expect(await page.locator('.chart[data-chart="workers"] .summary').textContent()).toMatch(
        /^now 1 running; 1 desired$/,
      );
    },
    2 * SLOW,
  );

  it("follows every worker's log at once, each line prefixed by its worker", async () => {
    const workerId = await page.locator('tr[data-worker]').getAttribute('data-worker');
    await page.getByRole('button', { name: "Follow every worker's log" }).click();
    const log = page.getByTestId('all-workers-log');
    await expect
      .poll(() => log.textContent(), { timeout: 20_000 })
      .toMatch(new RegExp(`\\[${workerId}\\] .*GET /health 200`));
    expect(await page.getByRole('heading', { name: /Log of every worker/ }).textContent()).toMatch(
      /1 worker followed/,
    );
  }, 30_000);

  it('shows the simulated GPUs on the GPUs page, and which worker of which endpoint holds one', async () => {
    const workerId = await page.locator('tr[data-worker]').getAttribute('data-worker');
    await page.getByRole('link', { name: 'GPUs', exact: true }).click();
    await page.getByRole('heading', { name: 'GPUs', exact: true }).waitFor();
    const rows = page.locator('tr[data-gpu]');
    await expect.poll(() => rows.count()).toBe(2);
    expect(await rows.nth(0).textContent()).toContain('GPU-simulated-h100-80g-0');
    expect(await rows.nth(0).textContent()).toContain('80 GB');
    const held = page.locator('tr[data-gpu]', { hasText: workerId ?? 'no worker' });
    await expect.poll(() => held.count()).toBe(1);
    expect(await held.locator('td.holder').textContent()).toContain(NAME);
    expect(await page.locator('tr[data-gpu]', { hasText: 'free' }).count()).toBe(1);
    expect(await page.getByTestId('gpu-summary').textContent()).toMatch(/2 GPUs, 1 busy, 1 free/);
    expect(await page.getByText('No worker waits for a GPU.').count()).toBe(1);
    // The holder links to its endpoint's page.
    await held.getByRole('link', { name: NAME }).click();
    await page.getByRole('heading', { name: NAME }).waitFor();
  });

  it('creates an API key in the page, shows it once, and the key works until it is deleted', async () => {
    await page.getByRole('link', { name: 'API keys', exact: true }).click();
    await page.getByRole('heading', { name: 'API keys' }).waitFor();
    // The operator's key is listed, never a secret.
    await expect.poll(() => page.locator('tr[data-api-key]').count()).toBe(1);
    expect(await page.locator('main').textContent()).not.toContain(OPERATOR_KEY);
    await page.getByLabel('Owner', { exact: true }).fill('has space');
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.locator('[data-field-error="ownerId"]').waitFor();
    await page.getByLabel('Owner', { exact: true }).fill('');
    await page.getByLabel('Key name').fill('e2e-key');
    await page.getByRole('button', { name: 'Create key' }).click();
    const secret = page.getByTestId('new-key').locator('code.secret');
    await secret.waitFor();
    const key = (await secret.textContent()) ?? '';
    expect(key).toMatch(/^sk_[a-z0-9]{12}_[A-Za-z0-9]{32}$/);
    const api = (k: string) =>
      fetch(`${server?.apiUrl}/gpu-instance/openapi/v1/endpoints`, {
        headers: { authorization: `Bearer ${k}` },
      });
    expect((await api(key)).status).toBe(200);
    const row = page.locator('tr[data-api-key]', { hasText: 'e2e-key' });
    await row.waitFor();
    expect(await row.textContent()).not.toContain(key);
    // Shown once: not after a reload.
    await page.reload();
    await row.waitFor();
    expect(await page.getByTestId('new-key').count()).toBe(0);
    expect(await page.locator('main').textContent()).not.toContain(key);

    await row.getByRole('button', { name: 'Delete the API key e2e-key' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete e2e-key' }).click();
    await expect.poll(() => row.count()).toBe(0);
    const refused = await api(key);
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { message: string }).message).toMatch(/revoked/);
    expect(await page.locator('main').textContent()).toMatch(/1 revoked key not shown/);
  });

  it('lists it on the Endpoints page, live, with its request rate and latency', async () => {
    await page.getByRole('link', { name: 'Endpoints' }).first().click();
    const row = page.locator('tr[data-endpoint]', { hasText: NAME });
    await expect.poll(() => row.locator('.badge').textContent()).toBe('serving');
    // ready / desired / most
    await expect.poll(() => row.locator('td.workers').textContent()).toBe('1 / 1 / 1');
    await expect.poll(async () => Number(await row.locator('td.rate').textContent())).toBeGreaterThan(0);
    expect(await row.locator('td.latency').textContent()).toMatch(/ms \/ .*ms$/);
    expect(await row.textContent()).toContain('1 x h100-80g');
    await page.getByLabel('Filter').fill('no-such-endpoint');
    await expect.poll(() => row.count()).toBe(0);
    await page.getByLabel('Filter').fill(NAME.toUpperCase());
    await expect.poll(() => row.count()).toBe(1);
    await row.getByRole('link', { name: NAME }).click();
  });

  it('saves registry credentials (a missing field refused beside it), offers them by name, deletes them', async () => {
    await page.getByRole('link', { name: 'Credentials', exact: true }).click();
    await page.getByRole('heading', { name: 'Registry credentials' }).waitFor();
    await page.getByLabel('Name', { exact: true }).fill('ghcr');
    await page.getByLabel('Username').fill('me');
    await page.getByRole('button', { name: 'Save credentials' }).click();
    const error = page.locator('[data-field-error="password"]');
    await error.waitFor();
    expect(await error.textContent()).toMatch(/password must be a non-empty string/);
    await page.getByLabel('Password or token').fill('ghp_secret');
    await page.getByRole('button', { name: 'Save credentials' }).click();
    const row = page.locator('tr[data-credential="ghcr"]');
    await row.waitFor();
    expect(await row.textContent()).not.toContain('ghp_secret');

    await page.goto(`${server?.apiUrl}/ui/#/endpoints/new`);
    await expect
      .poll(() => page.getByLabel('Registry credentials').locator('option').allTextContents())
      .toEqual(['None (a public image)', 'ghcr (me)']);

    await page.goto(`${server?.apiUrl}/ui/#/credentials`);
    await page.getByRole('button', { name: 'Delete the credentials ghcr' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete ghcr' }).click();
    await expect.poll(() => row.count()).toBe(0);
    await page.getByRole('link', { name: 'Endpoints' }).first().click();
    await page.locator('tr[data-endpoint]', { hasText: NAME }).getByRole('link', { name: NAME }).click();
    await page.getByRole('heading', { name: NAME }).waitFor();
  });

  it(
    'stops, starts and deletes it, deleting after a confirmation that names it',
    async () => {
      await page.getByRole('button', { name: 'Stop', exact: true }).click();
      await expect.poll(() => stateOf().textContent(), { timeout: SLOW }).toBe('stopped');
      await expect.poll(() => page.locator('tr[data-worker]').count(), { timeout: SLOW }).toBe(0);
      await page.getByRole('button', { name: 'Start', exact: true }).click();
      await expect.poll(() => stateOf().textContent(), { timeout: SLOW }).toBe('serving');

      await page.getByRole('button', { name: 'Delete', exact: true }).click();
      const dialog = page.getByRole('dialog');
      expect(await dialog.getByRole('heading').textContent()).toBe(`Delete ${NAME}?`);
      // Escape cancels: nothing is deleted.
      await page.keyboard.press('Escape');
      await expect.poll(() => dialog.isVisible()).toBe(false);
      expect(await stateOf().textContent()).toBe('serving');
      await page.getByRole('button', { name: 'Delete', exact: true }).click();
      await dialog.getByRole('button', { name: `Delete ${NAME}` }).click();
      await page.getByRole('heading', { name: 'Endpoints' }).waitFor();
      await expect.poll(() => page.locator('tr[data-endpoint]', { hasText: NAME }).count()).toBe(0);
    },
    3 * SLOW,
  );

  it(
    "shows a queue endpoint's type and /run and /runsync first, and its copied curl runs a job",
    async () => {
      const created = await callApi(server as ServeProcess, OPERATOR_KEY, 'endpoint/create', {
        endpoint: {
          name: 'web-queue',
          type: 'queue',
          workerConfig: { minNum: 0, maxNum: 1, gpuNum: 1 },
          image: { image: 'runpod-worker:local', command: `'${process.execPath}' '${RUNPOD_WORKER}'` },
        },
      });
      expect(created.status, created.text).toBe(200);
      const id = created.body.id as string;
      await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server?.apiUrl ?? '' });
      await page.goto(`${server?.apiUrl}/ui/#/endpoints/${id}`);
      await page.getByTestId('endpoint-type').waitFor();
      expect(await page.getByTestId('endpoint-type').textContent()).toBe('queue');
      const facts = await page.locator('dl.facts dt').allTextContents();
      expect(facts.slice(facts.indexOf('Type'))).toEqual(['Type', 'Run', 'Run sync', 'Status', 'Health']);
      await page.getByRole('button', { name: 'Copy a curl request to web-queue' }).click();
      const curl = await page.evaluate<string>('navigator.clipboard.readText()');
      expect(curl).toContain(`/v2/${id}/runsync`);
      // Pasted into a shell with the key it names: the job runs on a worker started from zero.
      const ran = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
        execFile(
          '/bin/sh',
          ['-c', curl],
          { env: { ...process.env, CORRAL_API_KEY: OPERATOR_KEY }, timeout: 2 * SLOW },
          (error, stdout, stderr) => resolve({ code: error ? 1 : 0, stdout, stderr }),
        ),
      );
      expect(ran.code, ran.stderr).toBe(0);
      expect(JSON.parse(ran.stdout)).toMatchObject({ status: 'COMPLETED', output: { echo: {} } });
    },
    3 * SLOW,
  );
});
