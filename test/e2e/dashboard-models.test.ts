/**
 * The dashboard's Models page in a real Chromium (issue 34): `corral serve` (the built binary) on the local runtime
 * with the hub stand-in (test/support/hub-stand-in.ts) as `models.hubUrl`, sending slowly enough to watch. An
 * endpoint names a model's small files (cached at once, so listed), another the whole model: while its worker
 * downloads the weights, the Endpoint page's worker list says the download's progress and the Models page shows a
 * bar with the bytes, rate and time left; then the page shows the cached model (its revision, short commit, files
 * and size) with both endpoints' names, linked to their pages. A second owner's key
 * sees no model there. Where the server has `POST models` and `DELETE models/{org}/{name}` (built in parallel), a
 * model is pulled in the form (a gated one refused beside the token field first), and removed after a confirmation
 * (one an endpoint names refused with the API's words); without them that test is skipped, saying why.
 */
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { chromiumAvailable, launchChromium, saveFailure, watchConsole } from '../support/browser.js';
import { type HubStandIn, startHubStandIn } from '../support/hub-stand-in.js';
import {
  callApi,
  localRuntimeArgs,
  printServeLog,
  type ServeProcess,
  startServeWithConfig,
} from '../support/process.js';
import { localWorkerEndpoint } from '../support/test-image.js';

const KEY = 'e2e-dashboard-models-operator-key-00001';
const FAILURES = fileURLToPath(new URL('../../test-results/dashboard-models/', import.meta.url));
const MODEL = 'corral-test/tiny-llm';
const SMALL = 'corral-test/small-llm';
const GATED = 'corral-test/gated-llm';
const MB = 1024 * 1024;

describe.runIf(chromiumAvailable())("the dashboard's Models page in a real Chromium", () => {
  let hub: HubStandIn;
  let server: ServeProcess | undefined;
  let close: (() => Promise<void>) | undefined;
  let browser: Browser;
  let page: Page;
  let consoleLog: () => string;

  const api = (path: string, body?: unknown, key = KEY) => callApi(server as ServeProcess, key, path, body);
  const signIn = async (target: Page, key: string) => {
    await target.goto(`${server?.apiUrl}/ui/`);
    await target.getByLabel('API key').fill(key);
    await target.getByRole('button', { name: 'Sign in' }).click();
    await target.getByRole('heading', { name: 'Endpoints' }).waitFor();
  };

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
      configYaml: `models:\n  hubUrl: ${hub.url}\n`,
      serveArgs: localRuntimeArgs('h100-80g:2'),
      apiKey: KEY,
    });
    server = started.server;
    close = started.close;
    browser = await launchChromium();
    page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    consoleLog = watchConsole(page);
  }, 60_000);

  afterEach(async (test) => {
    if (test.task.result?.state !== 'fail') return;
    const shot = await saveFailure(page, consoleLog(), FAILURES, test.task.name);
    process.stderr.write(`dashboard models test failed: screenshot ${shot}, console log beside it\n`);
    printServeLog(server, 80);
  });

  afterAll(async () => {
    await browser?.close();
    await close?.();
    await hub?.close();
  }, 60_000);

  it('shows a download in flight on the Endpoint and Models pages, then the cached model with its endpoints', async () => {
    await signIn(page, KEY);
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

    const other = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    try {
      await signIn(other, made.body.key);
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
