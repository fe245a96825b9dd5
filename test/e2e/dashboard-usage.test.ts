/**
 * The dashboard's Usage page and budget banner in a real Chromium (issue 32): `corral serve` (the built binary) on
 * the local runtime with prices in its config file; two endpoints' workers run, one serves a request, and both are
 * deleted. The page's table shows each endpoint's worker hours, GPU-hours and amount as the billing route sums
 * them, the toggle shows them by state, and the CSV download holds the table's rows. Restarted with a GPU-hour
 * budget of which that use is about 85 %, every page shows the warning banner naming the budget and its reset.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  chromiumAvailable,
  keepFailedTest,
  openSuiteBrowser,
  type SuiteBrowser,
  signIn,
} from '../support/browser.js';
import {
  callApi,
  localRuntimeArgs,
  type ServeProcess,
  startServe,
  startServeWithConfig,
} from '../support/process.js';
import { localWorkerEndpoint } from '../support/test-image.js';

const KEY = 'e2e-dashboard-usage-operator-key-000001';
const PER_HOUR = 360;
const PRICES = `usage:\n  currency: EUR\n  prices:\n    gpus:\n      h100-80g:\n        perHour: ${PER_HOUR}\n`;
const DAY_MS = 86_400_000;

interface Row {
  endpointId?: string;
  state?: string;
  timeBilledMs: number;
  amount: number;
  currency: string;
  gpuSeconds: Record<string, number>;
}

/** The table's cells a row of billing rows should show: its key, worker hours, GPU-hours and amount. */
function expectedCells(rows: Row[], key: 'endpointId' | 'state'): Map<string, string[]> {
  const sums = new Map<string, { ms: number; gpuSeconds: number; amount: number }>();
  for (const row of rows) {
    const name = row[key] as string;
    const sum = sums.get(name) ?? { ms: 0, gpuSeconds: 0, amount: 0 };
    sum.ms += row.timeBilledMs;
    sum.gpuSeconds += Object.values(row.gpuSeconds).reduce((a, b) => a + b, 0);
    sum.amount += row.amount;
    sums.set(name, sum);
  }
  return new Map(
    [...sums].map(([name, s]) => [
      name,
      [name, (s.ms / 3_600_000).toFixed(3), (s.gpuSeconds / 3600).toFixed(3), `${s.amount.toFixed(2)} EUR`],
    ]),
  );
}

describe.runIf(chromiumAvailable())("the dashboard's Usage page and budget banner in a real Chromium", () => {
  let server: ServeProcess | undefined;
  let dataDir = '';
  let at: SuiteBrowser | undefined;
  let page: Page;
  const serveArgs = localRuntimeArgs('h100-80g:2');

  const api = (path: string, body?: unknown) => callApi(server as ServeProcess, KEY, path, body);
  const billing = async (grouping: string): Promise<Row[]> => {
    const start = new Date(Math.floor(Date.now() / DAY_MS) * DAY_MS - 29 * DAY_MS).toISOString();
    const answer = await api(`billing/endpoints?bucketSize=day&grouping=${grouping}&startTime=${start}`);
    expect(answer.status, answer.text).toBe(200);
    return answer.body as Row[];
  };
  const tableCells = async () => {
    const rows = page.locator('[data-testid="usage-table"] tbody tr');
    const cells = await rows.evaluateAll((trs) =>
      trs.map((tr) => [
        tr.getAttribute('data-key') ?? '',
        ...[...tr.querySelectorAll('td')].slice(1).map((td) => td.textContent ?? ''),
      ]),
    );
    return new Map(cells.map((line) => [line[0] as string, line]));
  };

  beforeAll(async () => {
    const started = await startServeWithConfig({
      dirPrefix: 'corral-e2e-dashboard-usage-',
      configYaml: PRICES,
      serveArgs,
      apiKey: KEY,
    });
    server = started.server;
    dataDir = started.dataDir;
    at = await openSuiteBrowser();
    page = at.page;
  }, 60_000);

  afterEach((test) => keepFailedTest({ suite: 'dashboard-usage', test, at, server }));

  afterAll(async () => {
    await at?.browser.close();
    await server?.stop();
    if (dataDir !== '') rmSync(dataDir, { recursive: true, force: true });
  }, 60_000);

  it('shows the ledger by endpoint and by state, and downloads the table as CSV', async () => {
    const ids: string[] = [];
    for (const name of ['usage-a', 'usage-b']) {
      const created = await api('endpoint/create', { endpoint: localWorkerEndpoint(name, `${name}:local`) });
      expect(created.status, created.text).toBe(200);
      ids.push(created.body.id);
    }
    const [served, idle] = ids as [string, string];
    const workerState = async (id: string) =>
      (await api(`endpoint?id=${id}`)).body.endpoint.workers[0]?.state.state;
    await vi.waitFor(
      async () =>
        expect([await workerState(served), await workerState(idle)]).toEqual(['running', 'running']),
      {
        timeout: 30_000,
        interval: 100,
      },
    );
    const appName = (await api(`endpoint?id=${served}`)).body.endpoint.appName as string;
    const work = await fetch(`${server?.gatewayUrl}/e/${appName}/work?ms=1500`, {
      headers: { authorization: `Bearer ${KEY}` },
    });
    expect(work.status).toBe(200);
    for (const id of ids) expect((await api('endpoint/delete', { id })).status).toBe(200);
    // Their spans close at their end, written within a second: then the ledger no longer grows.
    let last = '';
    const rows = await vi.waitFor(
      async () => {
        const now = await billing('endpointId');
        const same = JSON.stringify(now) === last;
        last = JSON.stringify(now);
        expect(same && now.length >= 2).toBe(true);
        return now;
      },
      { timeout: 30_000, interval: 1500 },
    );
    const byEndpoint = expectedCells(rows, 'endpointId');
    expect([...byEndpoint.keys()].sort()).toEqual([...ids].sort());

    await signIn(page, server?.apiUrl ?? '', KEY);
    await page.getByRole('link', { name: 'Usage' }).click();
    await page.getByRole('heading', { name: 'Usage' }).waitFor();
    await page.getByTestId('usage-table').waitFor();
    expect(await tableCells()).toEqual(byEndpoint);
    expect(await page.locator('[data-chart="usage"]').getAttribute('data-series')).toBe('2');
    expect(await page.getByRole('button', { name: '30 days' }).getAttribute('aria-pressed')).toBe('true');

    // By state: the served endpoint's request made some of the time active.
    await page.getByRole('button', { name: 'State', exact: true }).click();
    await page.getByRole('table', { name: 'Usage by state' }).waitFor();
    const byState = expectedCells(await billing('state'), 'state');
    expect(await tableCells()).toEqual(byState);
    expect([...byState.keys()]).toEqual(expect.arrayContaining(['starting', 'active', 'idle']));

    // The CSV holds the table's rows, in corral usage --csv's columns.
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Download CSV' }).click(),
    ]);
    const csv = readFileSync((await download.path()) as string, 'utf8')
      .trim()
      .split('\n');
    const header = (csv[0] as string).split(',');
    expect(header.slice(0, 4)).toEqual(['time', 'state', 'ownerId', 'timeBilledMs']);
    const column = (cells: string[], name: string) => cells[header.indexOf(name)] as string;
    const fromCsv = new Map(
      csv.slice(1).map((line) => {
        const cells = line.split(',');
        const gpuSeconds = header
          .filter((name) => name.startsWith('gpuSeconds.'))
          .reduce((sum, name) => sum + Number(column(cells, name)), 0);
        const state = column(cells, 'state');
        return [
          state,
          [
            state,
            (Number(column(cells, 'timeBilledMs')) / 3_600_000).toFixed(3),
            (gpuSeconds / 3600).toFixed(3),
            `${Number(column(cells, 'amount')).toFixed(2)} ${column(cells, 'currency')}`,
          ],
        ];
      }),
    );
    expect(fromCsv).toEqual(await tableCells());
    expect(await page.getByTestId('budget-banner').count()).toBe(0);
  }, 90_000);

  it('warns on every page from 80 % of the owner budget, naming it and its reset', async () => {
    // The month's GPU-hours so far (the first test's workers, gone): a budget of which they are about 85 %.
    const quota = await api('quota');
    expect(quota.body.budget).toBeUndefined();
    const used = (await billing('endpointId')).reduce(
      (sum, row) => sum + Object.values(row.gpuSeconds).reduce((a, b) => a + b, 0) / 3600,
      0,
    );
    const limit = Math.round((used / 0.85) * 1e6) / 1e6;
    const config = join(dataDir, 'corral.yaml');
    writeFileSync(
      config,
      `${PRICES}quotas:\n  owners:\n    default:\n      budget: { gpuHoursPerMonth: ${limit} }\n`,
    );
    await server?.stop();
    server = await startServe([...serveArgs, '--config', config], {
      CORRAL_DATA_DIR: dataDir,
      CORRAL_API_KEY: KEY,
    });
    expect((await api('quota')).body.budget).toMatchObject({ state: 'warning', unit: 'GPU-hours', limit });

    await signIn(page, server?.apiUrl ?? '', KEY);
    const banner = page.getByTestId('budget-banner');
    await banner.waitFor();
    expect(await banner.getAttribute('data-state')).toBe('warning');
    const text = (await banner.textContent()) ?? '';
    expect(text).toMatch(/Budget 8\d % used\./);
    expect(text).toContain('monthly GPU-hour budget');
    expect(text).toMatch(/resets at \d{4}-\d\d-01T00:00:00\.000Z/);
    await page.getByRole('link', { name: 'Usage' }).click();
    await page.getByRole('heading', { name: 'Usage' }).waitFor();
    expect(await banner.getAttribute('data-state')).toBe('warning');
  }, 60_000);
});
