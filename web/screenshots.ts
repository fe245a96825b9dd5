/**
 * `npm run screenshots [folder]`: starts `corral serve` (local runtime, simulated GPUs) with a few endpoints in
 * different states, then photographs each dashboard page in Debian's headless Chromium at 1280x800 and 390x844
 * (whole page) into the folder (docs/dashboard by default), for review. Needs `npm run build` first (the script's
 * npm entry runs it). The history samples every 2 s here (10 s by default), so that a minute of traffic (a wake
 * from zero, bursts that queue and scale up, some 404s) draws charts with some shape.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { launchChromium } from '../test/support/browser.js';
import { callApi, type ServeProcess, startServe } from '../test/support/process.js';
import { WORKER_SCRIPT } from '../test/support/test-image.js';

const KEY = 'screenshots-operator-key-0123456789';
const OUT = process.argv[2] ?? fileURLToPath(new URL('../docs/dashboard/', import.meta.url));
const VIEWPORTS = [
  { name: 'laptop', width: 1280, height: 800 },
  { name: 'phone', width: 390, height: 844 },
];
const worker = `'${process.execPath}' '${WORKER_SCRIPT}'`;

async function create(server: ServeProcess, endpoint: Record<string, unknown>): Promise<string> {
  const answer = await callApi(server, KEY, 'endpoint/create', {
    endpoint: { image: { image: 'example/model:1', command: worker }, ports: [{ port: 8000 }], ...endpoint },
  });
  if (answer.status !== 200) throw new Error(`create failed: ${answer.text}`);
  return answer.body.id as string;
}

async function waitFor(what: string, check: () => Promise<boolean>, ms = 30_000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

async function state(server: ServeProcess, id: string): Promise<string> {
  return (await callApi(server, KEY, `endpoint?id=${id}`)).body.endpoint.state.state as string;
}

async function shoot(page: Page, name: string, viewport: string, fullPage = true): Promise<void> {
  // Let the polling pages settle on their live data.
  await page.waitForTimeout(600);
  const path = join(OUT, `${name}-${viewport}.png`);
  await page.screenshot({ path, fullPage });
  process.stdout.write(`${path}\n`);
}

/** A minute of traffic to `appName`: bursts of slow requests (they queue past maxConcurrent), fast ones, 404s. */
async function traffic(server: ServeProcess, appName: string, seconds: number): Promise<void> {
  const call = (path: string) =>
    fetch(`${server.gatewayUrl}/e/${appName}${path}`, { headers: { authorization: `Bearer ${KEY}` } }).then(
      (r) => r.text(),
    );
  const until = Date.now() + seconds * 1000;
  for (let round = 0; Date.now() < until; round += 1) {
    const burst = round % 6 === 2 ? 14 : 3;
    const slow = round % 6 === 2 ? 900 : 20 + (round % 5) * 15;
    const calls = Array.from({ length: burst }, (_, i) => call(`/work?ms=${slow + i * 7}`));
    if (round % 4 === 1) calls.push(call('/no-such-path'));
    await Promise.all(calls);
    await new Promise((resolve) => setTimeout(resolve, 400));
  }
}

const dataDir = mkdtempSync(join(tmpdir(), 'corral-screenshots-'));
mkdirSync(OUT, { recursive: true });
// The finetune endpoint's minNum takes the GPUs past the default quota (half the inventory): lifted here.
const configFile = join(dataDir, 'corral.yaml');
writeFileSync(configFile, 'quotas: { minGpus: unlimited }\nhistory: { intervalSeconds: 2 }\n');
const server = await startServe(
  [
    '--config',
    configFile,
    '--runtime',
    'local',
    '--gpus',
    'h100-80g:2,a100-40g:2',
    ...(process.getuid?.() === 0 ? ['--local-allow-root'] : []),
  ],
  { CORRAL_DATA_DIR: dataDir, CORRAL_API_KEY: KEY },
);
const browser = await launchChromium();
try {
  const chat = await create(server, {
    name: 'chat-llm',
    appName: 'chat-llm',
    workerConfig: { minNum: 0, maxNum: 2, gpuNum: 1, maxConcurrent: 4 },
    products: [{ id: 'h100-80g' }],
    envs: [{ key: 'MODEL', value: 'tiny-chat' }],
  });
  await create(server, {
    name: 'image-gen',
    appName: 'image-gen',
    workerConfig: { minNum: 1, maxNum: 1, gpuNum: 1 },
    products: [{ id: 'a100-40g' }],
    envs: [{ key: 'EXIT_ON_START', value: '3' }],
  });
  const batch = await create(server, { name: 'batch-embed', appName: 'batch-embed' });
  await create(server, { name: 'whisper', appName: 'whisper', public: true, workerConfig: { maxNum: 3 } });
  await callApi(server, KEY, 'endpoint/stop', { id: batch });
  await callApi(server, KEY, 'repository/auth/save', {
    name: 'ghcr',
    username: 'ci-bot',
    password: 'not-shown',
  });
  // A minute of traffic through the gateway (its first request wakes chat-llm from zero), for the charts and the
  // figures; then two more samples, so that the last one has it all.
  await traffic(server, 'chat-llm', 60);
  await waitFor('chat-llm serving', async () => (await state(server, chat)) === 'serving');
  // Two H100s for one worker while chat-llm holds one: it waits, and the GPUs page says why.
  await create(server, {
    name: 'finetune',
    appName: 'finetune',
    workerConfig: { minNum: 1, maxNum: 1, gpuNum: 2 },
    products: [{ id: 'h100-80g' }],
  });
  await callApi(server, KEY, 'apikey/create', { name: 'ci', ownerId: 'team-a' });
  await new Promise((resolve) => setTimeout(resolve, 4_000));

  for (const viewport of VIEWPORTS) {
    const context = await browser.newContext({
      viewport: { width: viewport.width, height: viewport.height },
    });
    const page = await context.newPage();
    await page.goto(`${server.apiUrl}/`);
    await page.getByLabel('API key').waitFor();
    await shoot(page, 'sign-in', viewport.name);
    await page.getByLabel('API key').fill(KEY);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator('tr[data-endpoint]').first().waitFor();
    await shoot(page, 'endpoints', viewport.name);

    await page.goto(`${server.apiUrl}/ui/#/endpoints/${chat}`);
    await page.locator('tr[data-worker]').first().waitFor();
    await page
      .getByRole('button', { name: /^Follow the log of worker/ })
      .first()
      .click();
    await page.locator('pre.log', { hasText: 'GET' }).waitFor();
    await page.locator('.chart canvas').first().waitFor();
    await shoot(page, 'endpoint', viewport.name);
    await page.getByRole('button', { name: "Follow every worker's log" }).click();
    await page.getByTestId('all-workers-log').locator('.log-worker').first().waitFor();
    await shoot(page, 'endpoint-all-logs', viewport.name);

    await page.getByRole('button', { name: 'Delete', exact: true }).click();
    await page.getByRole('dialog').waitFor();
    // The dialog's backdrop covers the viewport only: the viewport is the picture.
    await shoot(page, 'delete-dialog', viewport.name, false);
    await page.keyboard.press('Escape');

    await page.goto(`${server.apiUrl}/ui/#/endpoints/${chat}/edit`);
    await page.getByLabel('Image').waitFor();
    await shoot(page, 'edit', viewport.name);

    await page.goto(`${server.apiUrl}/ui/#/credentials`);
    await page.locator('tr[data-credential]').first().waitFor();
    await shoot(page, 'credentials', viewport.name);

    await page.goto(`${server.apiUrl}/ui/#/gpus`);
    await page.locator('tr[data-waiting]').first().waitFor();
    await shoot(page, 'gpus', viewport.name);

    await page.goto(`${server.apiUrl}/ui/#/keys`);
    await page.locator('tr[data-api-key]').first().waitFor();
    await page.getByLabel('Key name').fill(`dashboard-${viewport.name}`);
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByTestId('new-key').waitFor();
    await shoot(page, 'api-keys', viewport.name);

    await page.goto(`${server.apiUrl}/ui/#/endpoints/new`);
    await page.getByLabel('Image').fill('example/model:1');
    await page.getByLabel('Most workers').fill('999');
    await page.getByRole('button', { name: 'Create endpoint' }).click();
    await page.locator('[data-field-error]').first().waitFor();
    await shoot(page, 'create-with-error', viewport.name);
    await context.close();
  }
} finally {
  await browser.close();
  await server.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
