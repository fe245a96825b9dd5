/**
 * `runsync` against a plain gateway request (issue 22), part of `npm run bench -- jobs`: a real `corral serve`
 * (dist/, SQLite, the `local` runtime) with one `http` endpoint whose warm test worker (minNum 1) answers
 * `POST /echo`, the endpoint's jobsPath. The same work two ways, alternating one by one on one keep-alive agent:
 * `POST /echo` through the gateway (the endpoint's Host) with `{"i": n}`, and `POST /v2/{appName}/runsync` with
 * `{"input": {"i": n}}` (the job is stored, taken, delivered through the same gateway to the same worker, its
 * result stored and answered). Latency of each, p50 and p99, and the p50 added. Target: under 5 ms added.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CorralClient } from '../../src/client/index.js';
import type { ServeProcess } from '../../test/support/process.js';
import { type Summary, summarize } from '../support.js';
import { buildDist } from '../tools.js';
import { startLocalServe, testWorkerImage } from './local-serve.js';

export interface RunsyncFigures {
  plain: Summary;
  runsync: Summary;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function post(
  agent: Agent,
  port: number,
  path: string,
  headers: Record<string, string>,
  body: string,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        agent,
        headers: { ...headers, 'content-type': 'application/json' },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          text += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        res.on('error', reject);
      },
    );
    req.setTimeout(60_000, () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end(body);
  });
}

export async function measureRunsync(rounds: number): Promise<RunsyncFigures> {
  buildDist();
  const dataDir = mkdtempSync(join(tmpdir(), 'corral-bench-jobs-runsync-'));
  const key = `sk_bench_${randomBytes(16).toString('hex')}`;
  const agent = new Agent({ keepAlive: true, maxSockets: 2 });
  let server: ServeProcess | undefined;
  try {
    server = await startLocalServe(dataDir, key);
    const client = new CorralClient({ baseUrl: server.apiUrl, apiKey: key });
    const appName = 'runsync';
    await client.createEndpoint({
      name: appName,
      appName,
      jobsPath: '/echo',
      image: testWorkerImage(),
      ports: [{ port: 8000 }],
      envs: [{ key: 'HOST', value: '127.0.0.1' }],
      healthy: { path: '/health' },
      workerConfig: { gpuNum: 1, minNum: 1, maxNum: 1, maxConcurrent: 64, freeTimeout: 5 },
    });
    const port = Number(new URL(server.gatewayUrl).port);
    const plainHeaders = { host: `${appName}.localhost`, authorization: `Bearer ${key}` };
    const jobHeaders = { authorization: `Bearer ${key}` };
    const plain = () => post(agent, port, '/echo', plainHeaders, '{"i":1}');
    const runsync = () => post(agent, port, `/v2/${appName}/runsync`, jobHeaders, '{"input":{"i":1}}');
    const deadline = Date.now() + 90_000;
    while ((await plain().catch(() => ({ status: 0 }))).status !== 200) {
      if (Date.now() > deadline) throw new Error('the worker did not serve through the gateway in 90 s');
      await sleep(200);
    }
    const first = await runsync();
    if (!first.text.includes('COMPLETED')) throw new Error(`runsync answered ${first.status} ${first.text}`);
    for (let i = 0; i < 20; i++) {
      await plain();
      await runsync();
    }
    const plainMs: number[] = [];
    const runsyncMs: number[] = [];
    for (let i = 0; i < rounds; i++) {
      let t = performance.now();
      const a = await plain();
      plainMs.push(performance.now() - t);
      t = performance.now();
      const b = await runsync();
      runsyncMs.push(performance.now() - t);
      if (a.status !== 200 || !b.text.includes('COMPLETED'))
        throw new Error(`round ${i}: ${a.status}, ${b.text}`);
    }
    return { plain: summarize(plainMs), runsync: summarize(runsyncMs) };
  } finally {
    agent.destroy();
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
