/**
 * Time to first token on RunPod's OpenAI route (issue 35), `CORRAL_BENCH_JOBS_PARTS=openai npm run bench -- jobs`:
 * a real `corral serve` (dist/, SQLite, the `local` runtime) with one warm `queue` endpoint whose worker runs
 * worker-vllm's handler (test/fixtures/worker/runpod-worker.mjs) with `metadata.stamp`: each server-sent event
 * carries when the handler made it, just before its yield. TTFT is the first byte's arrival at the client minus
 * the first event's stamp (one host, one wall clock). Baseline in the same run, alternating one by one: the same
 * handler's job read through RunPod's own `/v2/{endpoint}/run` + `/stream/{job}` long poll. Target: within 20 ms.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CorralClient } from '../../src/client/index.js';
import type { ServeProcess } from '../../test/support/process.js';
import { type Summary, summarize } from '../support.js';
import { buildDist } from '../tools.js';
import { nodeScriptImage, startLocalServe } from './local-serve.js';

export interface TtftFigures {
  openai: Summary;
  runpodStream: Summary;
}

const WORKER = fileURLToPath(new URL('../../test/fixtures/worker/runpod-worker.mjs', import.meta.url));
/** The handler waits this long before its first token, so that the request is already waiting for it. */
const FIRST_TOKEN_DELAY_MS = 30;
const wallNow = () => performance.timeOrigin + performance.now();

/** A request; resolves with the wall time of the first body byte and the whole body. */
function send(
  agent: Agent,
  port: number,
  method: string,
  path: string,
  key: string,
  body?: string,
): Promise<{ status: number; firstByteAt: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method,
        agent,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      },
      (res) => {
        let text = '';
        let firstByteAt = 0;
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          if (firstByteAt === 0) firstByteAt = wallNow();
          text += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, firstByteAt, text }));
        res.on('error', reject);
      },
    );
    req.setTimeout(60_000, () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end(body);
  });
}

/** The first `yielded_at` stamp in a text (JSON-escaped or not). */
function firstStamp(text: string): number {
  const match = /yielded_at\\?":([0-9.]+)/.exec(text);
  if (!match?.[1]) throw new Error(`no stamp in ${text.slice(0, 200)}`);
  return Number(match[1]);
}

export async function measureOpenAITtft(rounds: number): Promise<TtftFigures> {
  buildDist();
  const dataDir = mkdtempSync(join(tmpdir(), 'corral-bench-openai-ttft-'));
  const key = `sk_bench_${randomBytes(16).toString('hex')}`;
  const agent = new Agent({ keepAlive: true, maxSockets: 4 });
  let server: ServeProcess | undefined;
  try {
    server = await startLocalServe(dataDir, key);
    const client = new CorralClient({ baseUrl: server.apiUrl, apiKey: key });
    const created = await client.createEndpoint({
      name: 'openai-ttft',
      type: 'queue',
      image: nodeScriptImage('runpod-worker:local', WORKER),
      envs: [{ key: 'CONCURRENCY', value: '4' }],
      workerConfig: { gpuNum: 1, minNum: 1, maxNum: 1, maxConcurrent: 4, freeTimeout: 60 },
    });
    const id = created.id;
    const port = Number(new URL(server.gatewayUrl).port);
    const openaiInput = {
      model: 'corral-echo',
      messages: [{ role: 'user', content: 'one two three' }],
      stream: true,
      metadata: { stamp: '1', token_delay_ms: String(FIRST_TOKEN_DELAY_MS) },
    };
    const viaOpenAI = async (): Promise<number> => {
      const path = `/v2/${id}/openai/v1/chat/completions`;
      const answer = await send(agent, port, 'POST', path, key, JSON.stringify(openaiInput));
      if (answer.status !== 200 || !answer.text.endsWith('data: [DONE]\n\n'))
        throw new Error(`openai route answered ${answer.status} ${answer.text.slice(0, 300)}`);
      return answer.firstByteAt - firstStamp(answer.text);
    };
    const viaStream = async (): Promise<number> => {
      const input = { openai_route: '/v1/chat/completions', openai_input: openaiInput };
      const run = await send(agent, port, 'POST', `/v2/${id}/run`, key, JSON.stringify({ input }));
      const job = JSON.parse(run.text) as { id: string };
      for (;;) {
        const read = await send(agent, port, 'GET', `/v2/${id}/stream/${job.id}?wait=30000`, key);
        const body = JSON.parse(read.text) as { status: string; stream: unknown[] };
        if (body.stream.length > 0) return read.firstByteAt - firstStamp(read.text);
        if (body.status !== 'IN_QUEUE' && body.status !== 'IN_PROGRESS')
          throw new Error(`the job ended ${body.status} with nothing streamed`);
      }
    };
    const deadline = Date.now() + 90_000;
    for (;;) {
      const ok = await viaOpenAI().then(
        () => true,
        () => false,
      );
      if (ok) break;
      if (Date.now() > deadline) throw new Error('the worker did not answer the OpenAI route in 90 s');
    }
    for (let i = 0; i < 10; i++) {
      await viaOpenAI();
      await viaStream();
    }
    const openai: number[] = [];
    const runpodStream: number[] = [];
    for (let i = 0; i < rounds; i++) {
      openai.push(await viaOpenAI());
      runpodStream.push(await viaStream());
    }
    return { openai: summarize(openai), runpodStream: summarize(runpodStream) };
  } finally {
    agent.destroy();
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
