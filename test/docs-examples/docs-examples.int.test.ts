/**
 * Every example in the README and docs/ runs as written: each page's command blocks (```sh, ```bash, ```console's
 * `$ ` lines) run in order in one bash session against one real `corral serve` on Docker, and each must exit 0 and
 * print the fields of the output the page shows (a `# {...}` comment, or a ```json block right below).
 *
 * What is run: shell blocks, with `corral` on PATH (bin/corral.js, as `npm link` puts it), CORRAL_API_KEY and
 * CORRAL_API_URL set as the first start's banner tells a reader to, in a scratch folder per page that holds the
 * repository's scripts/ (blocks run there as from a clone). What is not: python and js blocks (the reasons are in
 * extract.ts: NOT_RUN_LANGUAGES), and blocks a page marks `<!-- docs-examples: skip (reason) -->`, or a whole page
 * `skip-page (reason)`: each printed with its reason. The only changes to a block's text are the table below.
 */
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { integrationAvailable } from '../support/integration.js';
import { CORRAL_BIN, callApi, type ServeProcess, startServeWithConfig } from '../support/process.js';
import {
  dockerAvailable,
  ensureStandInImage,
  ensureTestImage,
  NGINX_STAND_IN,
  TEST_IMAGE,
} from '../support/test-image.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';
import { type CommandBlock, commandBlocks } from './extract.js';
import { type BlockRun, describeFailure, runPage } from './session.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** The key the test's serve starts with; the pages' `sk_...` stands for it. */
const KEY = 'sk_docs-examples-0123456789abcdef';
/** How long one block may run: a cold start on Docker and `corral apply`'s wait for a ready worker fit. */
const BLOCK_TIMEOUT_MS = 150_000;

/** The runpod-python worker loop's stand-in (test/fixtures/worker/runpod-worker.mjs) for a queue endpoint's image. */
const RUNPOD_WORKER_STAND_IN = {
  tag: 'corral-test-runpod-worker:latest',
  lines: ['CMD ["/runpod-worker.mjs"]'],
};

/** Registry images the pages name, and the local image that stands in for each. */
const STAND_INS: Record<string, { tag: string; lines: string[] }> = {
  'nginx:latest': NGINX_STAND_IN,
  'registry.example.com/me/sdxl-worker:1': RUNPOD_WORKER_STAND_IN,
  // The same stand-in runs worker-vllm's handler for RunPod's OpenAI input (over a stand-in model).
  'registry.example.com/me/worker-vllm:2': RUNPOD_WORKER_STAND_IN,
  // An HTTP worker that serves /health on port 8000 (test/fixtures/worker/worker.mjs).
  'registry.example.com/sdxl:1.0': { tag: TEST_IMAGE, lines: [] },
};

/** Variables the pages take a reader to have set already, with the values that stand for them here. */
function readerEnv(server: ServeProcess, key: string): Record<string, string> {
  return {
    CORRAL_API_KEY: key,
    CORRAL_API_URL: server.apiUrl,
    HF_TOKEN: 'hf_docs-example-token',
    // The scrape token, where the server has one; an admin key reads /metrics too.
    CORRAL_METRICS_TOKEN: key,
  };
}

/** The pages' addresses, placeholders and server start, and what each becomes here: the whole of what is changed. */
function substitutions(server: ServeProcess, webhooks: WebhookReceiver): [RegExp, string][] {
  const gateway = new URL(server.gatewayUrl);
  return [
    ...Object.entries(STAND_INS).map(([image, standIn]): [RegExp, string] => [literal(image), standIn.tag]),
    [literal('http://127.0.0.1:8080'), server.apiUrl],
    [literal('127.0.0.1:8000'), gateway.host],
    [literal('localhost:8000'), `localhost:${gateway.port}`],
    [literal('corral.example.com:8000'), gateway.host],
    [literal('sk_...'), KEY],
    // Jobs' webhooks go to a receiver of the test's (the serve lets them reach loopback).
    [literal('https://hooks.example.com/corral'), `${webhooks.base}/corral`],
    // The page's own `corral serve &` is this test's serve, already running with `--gpus h100-80g:2`.
    [/^corral serve [^\n]*&[^\n]*$/gm, ': "the test\'s corral serve is running"'],
  ];
}

function literal(text: string): RegExp {
  return new RegExp(text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'g');
}

/** CORRAL_DOCS_EXAMPLES_PAGES (comma-separated, e.g. `docs/jobs.md`) runs only those pages, while fixing one. */
const ONLY = process.env.CORRAL_DOCS_EXAMPLES_PAGES?.split(',').filter(Boolean);
const ALL_PAGES = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];
const PAGES = ALL_PAGES.filter((page) => !ONLY || ONLY.includes(page));

const withDocker = integrationAvailable(
  'Docker',
  dockerAvailable(),
  'start dockerd (scripts/provision.sh does)',
);

describe.runIf(withDocker)(
  'every example in the README and docs/, run against corral serve on Docker',
  () => {
    let server: ServeProcess | undefined;
    let close: (() => Promise<void>) | undefined;
    let dataDir = '';
    let webhooks: WebhookReceiver | undefined;
    const scratch = mkdtempSync(join(tmpdir(), 'corral-docs-examples-'));
    const binDir = join(scratch, 'bin');

    beforeAll(async () => {
      for (const standIn of new Set(Object.values(STAND_INS))) {
        if (standIn.lines.length > 0) await ensureStandInImage(standIn.tag, standIn.lines);
        else await ensureTestImage();
      }
      webhooks = await startWebhookReceiver();
      ({ server, close, dataDir } = await startServeWithConfig({
        dirPrefix: 'corral-docs-examples-serve-',
        // A reconcile pass every 200 ms (1 s by default): the pages' creates, waits and rollouts act sooner, as written.
        configYaml: 'webhooks:\n  allowPrivate: true\ncontroller: { reconcileIntervalMs: 200 }\n',
        serveArgs: ['--runtime', 'docker', '--gpus', 'h100-80g:2', '--webhook-allow-private'],
        apiKey: KEY,
      }));
      // `corral` on PATH, as `npm link` puts it.
      mkdirSync(binDir);
      writeFileSync(join(binDir, 'corral'), `#!/bin/sh\nexec '${process.execPath}' '${CORRAL_BIN}' "$@"\n`, {
        mode: 0o755,
      });
    }, 300_000);

    afterAll(async () => {
      await close?.();
      await webhooks?.close();
      rmSync(scratch, { recursive: true, force: true });
    });

    it.each(PAGES)(
      '%s',
      async (page) => {
        const current = server;
        if (!current || !webhooks) throw new Error('corral serve is not running');
        const blocks = commandBlocks(page, readFileSync(join(ROOT, page), 'utf8'));
        const dir = join(scratch, page.replace(/[/.]/g, '-'));
        mkdirSync(dir);
        symlinkSync(join(ROOT, 'scripts'), join(dir, 'scripts'));
        const table = substitutions(current, webhooks);
        const logged = current.stdout().length;
        const runs = await runPage(blocks, {
          dir,
          env: {
            ...process.env,
            PATH: `${binDir}:${process.env.PATH}`,
            HOME: dir,
            ...readerEnv(current, KEY),
            // `corral keys` works on the server's database: on the server's machine, its data directory.
            CORRAL_DATA_DIR: dataDir,
            CORRAL_GATEWAY_URL: '',
          },
          substitute: (code) => table.reduce((text, [pattern, to]) => text.replace(pattern, to), code),
          timeoutMs: BLOCK_TIMEOUT_MS,
        });
        await deleteEndpoints(current);
        report(page, blocks, runs);
        const failures = runs.filter((run) => run.problems.length > 0);
        if (failures.length > 0) {
          console.error(`--- corral serve's log while ${page} ran ---\n${current.stdout().slice(logged)}`);
        }
        expect(failures.map(describeFailure).join('\n\n')).toBe('');
      },
      900_000,
    );
  },
);

/** Deletes the endpoints a page made, so that the next page starts as a reader's first does: names free again. */
async function deleteEndpoints(server: ServeProcess): Promise<void> {
  const { body } = await callApi(server, KEY, 'endpoints?pageSize=100&pageNum=0');
  for (const { id } of body.endpoints as { id: string }[])
    await callApi(server, KEY, 'endpoint/delete', { id });
}

/** Per page: how many blocks ran and passed, and how long they took; each skipped block with its reason. */
function report(page: string, blocks: CommandBlock[], runs: BlockRun[]): void {
  const passed = runs.filter((run) => run.problems.length === 0).length;
  const seconds = (runs.reduce((sum, run) => sum + run.ms, 0) / 1000).toFixed(1);
  const skipped = blocks.filter((block) => block.skip);
  const lines = [
    `docs-examples ${page}: ${runs.length} blocks ran, ${passed} passed, in ${seconds} s; ${skipped.length} skipped`,
    ...skipped.map((block) => `  skipped ${page}:${block.line} (${block.language}): ${block.skip}`),
  ];
  console.log(lines.join('\n'));
}
