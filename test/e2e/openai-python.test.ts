/**
 * Opt-in: the official `openai` Python client (test/fixtures/openai-python-client.py) against a real `corral serve`
 * (the built binary, the `local` runtime): a queue endpoint whose worker runs worker-vllm's handler over the RunPod
 * protocol, an http endpoint whose worker serves OpenAI's routes itself, and the model router in front of both.
 * Runs where `python3` (or CORRAL_TEST_PYTHON) imports `openai`; skipped, saying why, elsewhere: CI cannot reach
 * PyPI. The npm client's suite (openai-clients.test.ts) always runs.
 */
import { execFile, execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startOpenAIServe } from '../support/openai-serve.js';
import { printServeLog, type ServeProcess } from '../support/process.js';

const KEY = 'e2e-openai-python-operator-key-001';
const PYTHON = process.env.CORRAL_TEST_PYTHON ?? 'python3';
const CLIENT = fileURLToPath(new URL('../fixtures/openai-python-client.py', import.meta.url));

function openaiPythonVersion(): string | undefined {
  try {
    return execFileSync(PYTHON, ['-c', 'import openai; print(openai.__version__)'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    return undefined;
  }
}
const version = openaiPythonVersion();
if (!version)
  process.stderr.write(
    `skipping the openai Python client suite: ${PYTHON} cannot import openai (pip install openai, or set CORRAL_TEST_PYTHON)\n`,
  );

interface ClientRun {
  version: string;
  chat: string;
  stream: string;
  finish: string | null;
  completion: string;
  embedding: number[];
  models: string[];
  unknown_model: { status: number; type: string } | null;
}

/** Runs the client script against one base URL; its JSON, or the script's own words when it failed. */
function runClient(baseUrl: string, model: string): Promise<ClientRun> {
  return new Promise((resolve, reject) => {
    execFile(
      PYTHON,
      [CLIENT, baseUrl, KEY, model],
      { encoding: 'utf8', timeout: 60_000 },
      (error, out, err) =>
        error ? reject(new Error(`${error.message}\n${err}`)) : resolve(JSON.parse(out) as ClientRun),
    );
  });
}

describe.runIf(version)('the openai Python client against corral serve', () => {
  let server: ServeProcess | undefined;
  let close: (() => Promise<void>) | undefined;
  let queueId = '';
  let httpId = '';
  beforeEach(({ onTestFailed }) => onTestFailed(() => server && printServeLog(server)));

  beforeAll(async () => {
    const started = await startOpenAIServe({ dirPrefix: 'corral-e2e-openai-python-', apiKey: KEY });
    server = started.server;
    close = started.close;
    queueId = started.queueId;
    httpId = started.httpId;
  }, 60_000);

  afterAll(() => close?.(), 60_000);

  const expectAnswers = (run: ClientRun) => {
    expect(run.chat).toBe('hello from python');
    expect(run.stream).toBe('one two three four');
    expect(run.finish).toBe('stop');
    expect(run.completion).toBe('say this back');
    expect(run.embedding.length).toBeGreaterThan(0);
    for (const value of run.embedding) expect(typeof value).toBe('number');
  };

  it('a queue endpoint: every call a job, answered as the handler yielded', async () => {
    const run = await runClient(`${server?.gatewayUrl}/v2/${queueId}/openai/v1`, 'corral-echo');
    process.stdout.write(`[openai-python e2e] openai ${run.version}\n`);
    expectAnswers(run);
    expect(run.models).toEqual(['corral-echo']);
  }, 120_000);

  it("an http endpoint: passed through to its worker, whose refusal of an unknown model is the client's error", async () => {
    const run = await runClient(`${server?.gatewayUrl}/v2/${httpId}/openai/v1`, 'corral-echo');
    expectAnswers(run);
    expect(run.models).toEqual(['corral-echo']);
    expect(run.unknown_model).toEqual({ status: 404, type: 'NotFoundError' });
  }, 120_000);

  it('the model router: the model picks the endpoint; models.list names both; an unknown model is a 404', async () => {
    for (const model of ['queued-llama', 'corral-echo']) {
      const run = await runClient(`${server?.gatewayUrl}/openai/v1`, model);
      expectAnswers(run);
      expect(run.models.sort()).toEqual(['corral-echo', 'queued-llama']);
      expect(run.unknown_model).toEqual({ status: 404, type: 'NotFoundError' });
    }
  }, 180_000);
});
