import type { Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  chromiumAvailable,
  keepFailedTest,
  openSuiteBrowser,
  type SuiteBrowser,
  signIn,
} from '../support/browser.js';
import { type HubStandIn, startHubStandIn } from '../support/hub-stand-in.js';
import { callApi, localRuntimeArgs, type ServeProcess, startServeWithConfig } from '../support/process.js';
import { localWorkerEndpoint } from '../support/test-image.js';

const KEY = 'e2e-dashboard-models-operator-key-00001';
const MODEL = 'corral-test/tiny-llm';
const SMALL = 'corral-test/small-llm';
const GATED = 'corral-test/gated-llm';
const MB = 1024 * 1024;

describe.runIf(chromiumAvailable())("the dashboard's Models page in a real Chromium", () => {
  let hub: HubStandIn;
  let server: ServeProcess | undefined;
  let close: (() => Promise<void>) | undefined;
  let at: SuiteBrowser | undefined;
  let page: Page;

  const api = (path: string, body?: unknown, key = KEY) => callApi(server as ServeProcess, key, path, body);

  beforeAll(async () => {
    hub = await startHubStandIn({
      models: [
        { name: MODEL, weightBytes: 64 * MB, shards: 2 },
        { name: SMALL, weightBytes: 2 * MB },
        { name: GATED, weightBytes: MB, access: { kind: 'gated', tokens: ['hf_granted'] } },
      ],
      // About 16 s for the model: time to look at both pages while it downloads.
      bytesPerSecond: 4 * MB,
    });
    const started = await startServeWithConfig({
      dirPrefix: 'corral-e2e-dashboard-models-',
      // A reconcile pass every 200 ms (1 s by default): pulls and workers start sooner.
      configYaml: `controller: { reconcileIntervalMs: 200 }\nmodels:\n  hubUrl: ${hub.url}\n`,
      serveArgs: localRuntimeArgs('h100-80g:2'),
      apiKey: KEY,
    });
    server = started.server;
    close = started.close;
    at = await openSuiteBrowser();
    page = at.page;
  }, 60_000);

  afterEach((test) => keepFailedTest({ suite: 'dashboard-models', test, at, server }));

  afterAll(async () => {
    await at?.browser.close();
    await close?.();
    await hub?.close();
  }, 60_000);

  it('shows a download in flight on the Endpoint and Models pages, then the cached model with its endpoints', async () => {
    await signIn(page, server?.apiUrl ?? '', KEY);
    await page.getByRole('link', { name: 'Models' }).click();
    await page.getByTestId('models-empty').waitFor();

    // One endpoint takes the model's small files only (no weights: at once), so that its revision is listed...
    const small = await api('endpoint/create', {
      endpoint: {
        ...localWorkerEndpoint('reader-json', 'model-reader:local'),
        models: [{ name: MODEL, allowPatterns: ['*.json'] }],
      },
    });
    expect(small.status, small.text).toBe(200);
    await vi.waitFor(async () => expect((await api('models')).body.models).toHaveLength(1), {
      timeout: 20_000,
      interval: 100,
    });
    // ...and another takes every file: its worker waits in downloading while the weights come, slowly.
    const created = await api('endpoint/create', {
      endpoint: { ...localWorkerEndpoint('reader', 'model-reader:local'), models: [{ name: MODEL }] },
    });
    expect(created.status, created.text).toBe(200);
    const id: string = created.body.id;
    await vi.waitFor(
      async () => {
        const workers = (await api(`endpoint?id=${id}`)).body.endpoint.workers as {
          state: { state: string };
        }[];
        expect(workers[0]?.state.state).toBe('downloading');
      },
      { timeout: 20_000, interval: 100 },
    );

    // The worker list says what the worker waits for.
    await page.goto(`${server?.apiUrl}/ui/#/endpoints/${id}`);
    await expect
      .poll(async () => page.locator('[data-worker]').first().textContent(), { timeout: 10_000 })
      .toMatch(/downloading.*model corral-test\/tiny-llm: [\d.]+ of [\d.]+ GB/);

    // The Models page shows the download with a bar, its bytes, rate and time left, growing while it runs.
    await page.getByRole('link', { name: 'Models' }).click();
    const row = page.locator(`[data-model="${MODEL}"][data-revision="main"]`);
    const download = page.getByTestId('model-download');
    await download.waitFor({ timeout: 10_000 });
    await expect
      .poll(async () => download.textContent(), { timeout: 10_000 })
      .toMatch(/[\d.]+ [kM]?B of \d+ MB, [\d.]+ [kM]B\/s, about \d+ s left/);
    const bar = page.getByRole('progressbar', { name: `Download of ${MODEL}` });
    const first = Number(await bar.getAttribute('value'));
    await expect
      .poll(async () => Number(await bar.getAttribute('value')), { timeout: 10_000 })
      .toBeGreaterThan(first);

    // Once it is done the page reads once more and stops: the row shows the cached model.
    await download.waitFor({ state: 'detached', timeout: 40_000 });
    const { commit, files } = await hub.describe(MODEL);
    const cells = await row.locator('td').allTextContents();
    expect(cells.slice(0, 4)).toEqual([
      `${MODEL} main`,
      commit.slice(0, 12),
      String(files.length),
      expect.stringMatching(/^\d+ MB$/),
    ]);
    expect(cells[5]).toMatch(/^\d+ s ago$/);
    expect(cells[6]).toMatch(/^(reader-json, reader|reader, reader-json)$/);
    const link = row.getByRole('link', { name: 'reader', exact: true });
    expect(await link.getAttribute('href')).toBe(`#/endpoints/${encodeURIComponent(id)}`);
    await link.click();
    await page.getByRole('heading', { name: 'reader', exact: true }).waitFor();
  }, 120_000);

  it('pulls a model in the form, shows a refusal beside a field, and removes after a confirmation', async (context) => {
    // POST and DELETE models were built in parallel with this page: until the server has them, say so and skip.
    const document = (await (await fetch(`${server?.apiUrl}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, unknown>>;
    };
    const paths = Object.entries(document.paths);
    const served = paths.some(([path, item]) => path.endsWith('/models') && item.post !== undefined);
    if (!served) context.skip('this server has no POST models yet');

    await page.goto(`${server?.apiUrl}/ui/#/models`);
    await page.reload();
    const form = page.getByTestId('pull-form');
    await form.getByLabel('Model', { exact: true }).fill(GATED);
    await form.getByRole('button', { name: 'Pull' }).click();
    await expect
      .poll(async () => form.locator('[data-field-error]').allTextContents(), { timeout: 10_000 })
      .toEqual([expect.stringContaining('MODEL_GATED')]);
    // Beside the field the API names (the repository), else beside the token secret.
    const invalid = await form.locator('[aria-invalid="true"]').evaluateAll((all) => all.map((e) => e.id));
    expect(invalid).toHaveLength(1);
    expect(['m-name', 'm-tokenSecret']).toContain(invalid[0]);

    await form.getByLabel('Model', { exact: true }).fill(SMALL);
    await form.getByRole('button', { name: 'Pull' }).click();
    await expect
      .poll(async () => form.getByRole('status').textContent(), { timeout: 10_000 })
      .toMatch(new RegExp(`^${SMALL} \\(main\\) is (downloading|cached)\\.$`));
    const small = page.locator(`[data-model="${SMALL}"][data-revision="main"]`);
    await small.waitFor({ timeout: 10_000 });
    await small.getByTestId('model-download').waitFor({ state: 'detached', timeout: 20_000 });

    // A model an endpoint names is refused, in the API's words.
    await page.getByRole('button', { name: `Remove ${MODEL} (main) from the cache` }).click();
    await page.getByRole('button', { name: `Remove ${MODEL}`, exact: true }).click();
    await expect
      .poll(async () => page.getByRole('alert').first().textContent(), { timeout: 10_000 })
      .toContain('MODEL_IN_USE');
    await page.locator(`[data-model="${MODEL}"]`).waitFor();

    await page.getByRole('button', { name: `Remove ${SMALL} (main) from the cache` }).click();
    await page.getByRole('button', { name: `Remove ${SMALL}`, exact: true }).click();
    await small.waitFor({ state: 'detached', timeout: 10_000 });
    const listed = (await api('models')).body.models as { name: string }[];
    expect(listed.map((m) => m.name)).toEqual([MODEL]);
  }, 60_000);

  it("does not show one owner's cached model to another owner's key", async () => {
    const made = await api('apikey/create', { name: 'other', ownerId: 'team-other' });
    expect(made.status, made.text).toBe(200);
    const listed = await api('models', undefined, made.body.key);
    expect(listed.status, listed.text).toBe(200);
    expect(listed.body).toEqual({ scope: 'own', models: [] });

    const other = await (
      await (at as SuiteBrowser).browser.newContext({ viewport: { width: 1280, height: 900 } })
    ).newPage();
    try {
      await signIn(other, server?.apiUrl ?? '', made.body.key);
      await other.getByRole('link', { name: 'Models' }).click();
      await other.getByTestId('models-empty').waitFor();
      expect(await other.locator(`[data-model="${MODEL}"]`).count()).toBe(0);
      // The first owner's key still sees it.
      await page.goto(`${server?.apiUrl}/ui/#/models`);
      await page.reload();
      await page.locator(`[data-model="${MODEL}"]`).waitFor();
    } finally {
      await other.close();
    }
  }, 60_000);
});
