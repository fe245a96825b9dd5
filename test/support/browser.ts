/**
 * A real headless Chromium for the dashboard's end-to-end test and screenshots: Debian's `chromium` (or the one
 * CORRAL_CHROMIUM names) driven by playwright-core, which downloads no browser of its own. Skipped with the reason
 * where none is installed, required under CORRAL_REQUIRE_INTEGRATION=1 (test/support/integration.ts).
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Browser, chromium, type Page } from 'playwright-core';
import { integrationAvailable } from './integration.js';
import { printServeLog, type ServeProcess } from './process.js';

/** The browser binary: the one CORRAL_CHROMIUM names (if it exists), else the first usual path that exists. */
export function chromiumPath(): string | undefined {
  const named = process.env.CORRAL_CHROMIUM;
  const candidates =
    named !== undefined && named !== ''
      ? [named]
      : ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'];
  return candidates.find((path) => existsSync(path));
}

/** Whether the browser suites run here; throws under CORRAL_REQUIRE_INTEGRATION=1 when no browser is installed. */
export function chromiumAvailable(): boolean {
  return integrationAvailable(
    'Chromium',
    chromiumPath() !== undefined,
    `no Chromium at ${process.env.CORRAL_CHROMIUM || '/usr/bin/chromium'} (apt-get install chromium, or set CORRAL_CHROMIUM; scripts/provision.sh installs it)`,
  );
}

export async function launchChromium(): Promise<Browser> {
  const executablePath = chromiumPath();
  if (executablePath === undefined) throw new Error('no chromium found (chromiumAvailable() says why)');
  // As root (CI), Chromium's sandbox cannot start; the pages are our own, served from 127.0.0.1.
  const args = process.getuid?.() === 0 ? ['--no-sandbox'] : [];
  return chromium.launch({ executablePath, headless: true, args });
}

/** The page's console and errors as lines, kept from the moment it is watched. */
export function watchConsole(page: Page): () => string {
  const lines: string[] = [];
  page.on('console', (message) => lines.push(`[${message.type()}] ${message.text()}`));
  page.on('pageerror', (error) => lines.push(`[pageerror] ${error.message}`));
  page.on('requestfailed', (request) =>
    lines.push(`[requestfailed] ${request.method()} ${request.url()} ${request.failure()?.errorText ?? ''}`),
  );
  return () => lines.join('\n');
}

/** Saves a screenshot and the console log of a failed test under `dir`; returns the screenshot's path. */
export async function saveFailure(
  page: Page,
  consoleLog: string,
  dir: string,
  name: string,
): Promise<string> {
  mkdirSync(dir, { recursive: true });
  const safe = name.replace(/[^a-z0-9]+/gi, '-').slice(0, 80);
  const screenshot = join(dir, `${safe}.png`);
  await page.screenshot({ path: screenshot, fullPage: true }).catch(() => undefined);
  writeFileSync(join(dir, `${safe}.console.log`), `${page.url()}\n${consoleLog}\n`);
  return screenshot;
}

/** A dashboard suite's browser: Chromium, one page and what the page's console said. */
export interface SuiteBrowser {
  browser: Browser;
  page: Page;
  consoleLog: () => string;
}

/** Chromium with one page of 1280 by 900 (or `viewport`), its console watched from the start. */
export async function openSuiteBrowser(viewport = { width: 1280, height: 900 }): Promise<SuiteBrowser> {
  const browser = await launchChromium();
  const page = await (await browser.newContext({ viewport })).newPage();
  return { browser, page, consoleLog: watchConsole(page) };
}

/**
 * What a failed dashboard test leaves to look at: the page's screenshot and console under
 * test-results/{suite}/, named after the test, and `corral serve`'s last log lines (on stderr).
 */
export async function keepFailedTest(options: {
  suite: string;
  test: { task: { name: string; result?: { state?: string } } };
  at: SuiteBrowser | undefined;
  server: ServeProcess | undefined;
  logLines?: number;
}): Promise<void> {
  const { suite, test, at, server } = options;
  if (test.task.result?.state !== 'fail' || !at) return;
  const dir = fileURLToPath(new URL(`../../test-results/${suite}/`, import.meta.url));
  const shot = await saveFailure(at.page, at.consoleLog(), dir, test.task.name);
  process.stderr.write(`${suite} test failed: screenshot ${shot}, console log beside it\n`);
  printServeLog(server, options.logLines ?? 80);
}

/** Signs in to the dashboard at `apiUrl` with `key`, and waits for the Endpoints page. */
export async function signIn(page: Page, apiUrl: string, key: string): Promise<void> {
  await page.goto(`${apiUrl}/ui/`);
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Endpoints' }).waitFor();
}
