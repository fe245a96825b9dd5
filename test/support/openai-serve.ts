/**
 * A `corral serve` (the built binary, the `local` runtime) with the two endpoints the OpenAI client suites call: a
 * `queue` endpoint whose worker is Corral's RunPod protocol test worker with worker-vllm's handler
 * (test/fixtures/worker/runpod-worker.mjs; model router name `queued-llama`), and an http endpoint whose worker, the
 * plain test worker, serves OpenAI's routes itself as vLLM's server does (`corral-echo`, the one model it serves).
 */
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { callApi, localRuntimeArgs, type ServeProcess, startServeWithConfig } from './process.js';
import { WORKER_SCRIPT } from './test-image.js';

const RUNPOD_WORKER = fileURLToPath(new URL('../fixtures/worker/runpod-worker.mjs', import.meta.url));

export interface OpenAIServe {
  server: ServeProcess;
  close: () => Promise<void>;
  /** The queue endpoint's id. */
  queueId: string;
  /** The http endpoint's id. */
  httpId: string;
}

export async function startOpenAIServe(options: { dirPrefix: string; apiKey: string }): Promise<OpenAIServe> {
  const { server, close } = await startServeWithConfig({
    dirPrefix: options.dirPrefix,
    configYaml: 'jobs:\n  takeHoldSeconds: 5\n  stopGraceSeconds: 10\n',
    serveArgs: localRuntimeArgs('h100-80g:2'),
    apiKey: options.apiKey,
  });
  const create = async (endpoint: object) => {
    const created = await callApi(server, options.apiKey, 'endpoint/create', { endpoint });
    expect(created.status, created.text).toBe(200);
    return created.body.id as string;
  };
  const queueId = await create({
    name: 'vllm-like',
    type: 'queue',
    // The model router's name for it (any model: the handler answers whichever it is sent).
    openaiModel: 'queued-llama',
    workerConfig: { minNum: 1, maxNum: 1, freeTimeout: 300, maxConcurrent: 4, gpuNum: 1 },
    image: { image: 'runpod-worker:local', command: `'${process.execPath}' '${RUNPOD_WORKER}'` },
    envs: [
      { key: 'RUNPOD_PING_INTERVAL', value: '1000' },
      { key: 'CONCURRENCY', value: '4' },
    ],
  });
  const httpId = await create({
    name: 'vllm-server',
    // The model router's name for it: the one model the test worker serves.
    openaiModel: 'corral-echo',
    workerConfig: { minNum: 0, maxNum: 1, freeTimeout: 300, maxConcurrent: 4, gpuNum: 1 },
    // The test worker, whose `/v1/...` routes answer as vLLM's OpenAI server does.
    image: { image: 'model-server:local', command: `'${process.execPath}' '${WORKER_SCRIPT}'` },
    ports: [{ port: 8000 }],
  });
  return { server, close, queueId, httpId };
}
