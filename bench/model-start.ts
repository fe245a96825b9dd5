/**
 * `npm run bench -- model-start`: create-to-ready of a Docker worker whose model is already in the model cache
 * (mounted read-only where HF_HUB_CACHE points), against the same worker reading the same bytes from a plain
 * directory on the same warm disk (a read-only network storage: a bind, no cache, no hub), in one run (issue 34's
 * target: within 1.2x). `corral serve --runtime docker` (the built binary) and the hub stand-in
 * (bench/model-download.ts's startStandIn) serve a generated model of CORRAL_BENCH_MODEL_BYTES (5 GB by default);
 * the cache is filled once before the rounds and the plain copy made from its snapshot. Each worker is the test
 * image's with READ_BEFORE_LISTEN: it reads and hashes every byte before it listens, so both do the same work; ready
 * is the worker `running` and healthy in `GET endpoint`. Rounds alternate which goes first; prints each, the medians
 * and the load.
 */
import { spawnSync } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { cp, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { modelRepoDir, workerModelPath } from '../src/domain/model-refs.js';
import { HubModelCache } from '../src/models/hub-cache.js';
import { HubClient } from '../src/models/hub-client.js';
import { callApi, type ServeProcess, startServe } from '../test/support/process.js';
import {
  containersOf,
  ensureTestImage,
  removeInstallationResources,
  testWorkerEndpoint,
} from '../test/support/test-image.js';
import { startStandIn } from './model-download.js';
import { formatMs, loadAverage, table } from './support.js';

const MODEL = 'corral-bench/start-model';
const KEY = 'bench-model-start-operator-key-01';
const PLAIN_MOUNT = '/plain-model';
const READY_TIMEOUT_MS = 900_000;

type Kind = 'cache' | 'plain';

/** Every byte of every file under `dir` read once on the host, so that both copies start from a warm page cache. */
async function warm(dir: string): Promise<void> {
  for (const entry of await readdir(dir, { recursive: true })) {
    const path = join(dir, entry);
    if (!(await stat(path)).isFile()) continue;
    for await (const _chunk of createReadStream(path, { highWaterMark: 4 << 20 })) {
      // read and dropped
    }
  }
}

async function until(check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

export async function runModelStartBench(): Promise<void> {
  const weightBytes = Number(process.env.CORRAL_BENCH_MODEL_BYTES ?? 5_000_000_000);
  const rounds = Number(process.env.CORRAL_BENCH_ROUNDS ?? 2);
  console.log(`\n## model-start: ${weightBytes} bytes of weights, ${rounds} rounds, load ${loadAverage()}`);
  const image = await ensureTestImage();
  const hub = await startStandIn(weightBytes, MODEL);
  const dataDir = await mkdtemp(join(tmpdir(), 'corral-bench-model-start-'));
  let server: ServeProcess | undefined;
  try {
    const hubDir = join(dataDir, 'models', 'hub');
    const client = new HubClient({ hubUrl: hub.url });
    const cache = new HubModelCache({
      hubDir,
      client,
      clock: Date.now,
      logger: pino({ level: 'silent' }),
      diskBudgetBytes: null,
      namedModels: async () => new Set(),
    });
    const began = performance.now();
    const model = await cache.ensure(
      { name: MODEL, revision: 'main', allowPatterns: [], tokenSecret: null },
      null,
    );
    const commit = await client.resolveCommit(MODEL, 'main', null);
    const snapshot = join(hubDir, modelRepoDir(MODEL), 'snapshots', commit);
    const plain = join(dataDir, 'plain');
    await cp(snapshot, plain, { recursive: true, dereference: true });
    await warm(snapshot);
    await warm(plain);
    console.log(
      `cache filled (${model.bytes} bytes) and copied to a plain directory, both read once: ${formatMs(performance.now() - began)}`,
    );

    const config = join(dataDir, 'corral.yaml');
    await writeFile(
      config,
      [
        `models: { hubUrl: "${hub.url}" }`,
        `controller: { reconcileIntervalMs: 200, startupTimeoutSeconds: ${READY_TIMEOUT_MS / 1000} }`,
        'networkStorages:',
        `  - { id: plain, clusterID: bench, hostPath: "${plain}", owners: all, readOnly: true }`,
        '',
      ].join('\n'),
    );
    server = await startServe(['--runtime', 'docker', '--gpus', 'h100-80g:2', '--config', config], {
      CORRAL_DATA_DIR: dataDir,
      CORRAL_API_KEY: KEY,
    });
    const running = server;
    const api = (path: string, body?: unknown) => callApi(running, KEY, path, body);

    /** Milliseconds from the create call to the worker running and healthy; the endpoint is deleted after. */
    const createToReady = async (kind: Kind, round: number): Promise<number> => {
      const readDir = kind === 'cache' ? `${workerModelPath(MODEL)}/snapshots/${commit}` : PLAIN_MOUNT;
      const endpoint = {
        ...testWorkerEndpoint(image),
        name: `start-${kind}-${round}`,
        envs: [{ key: 'READ_BEFORE_LISTEN', value: readDir }],
        ...(kind === 'cache'
          ? { models: [{ name: MODEL }] }
          : { clusterID: 'bench', volumeMounts: [{ type: 'network', id: 'plain', mountPath: PLAIN_MOUNT }] }),
      };
      const start = performance.now();
      const created = await api('endpoint/create', { endpoint });
      if (created.status !== 200) throw new Error(`create ${kind}: ${created.text}`);
      const id: string = created.body.id;
      await until(async () => {
        const workers = (await api(`endpoint?id=${id}`)).body.endpoint.workers as {
          state: { state: string };
          healthy: boolean;
        }[];
        return workers[0]?.state.state === 'running' && workers[0].healthy;
      }, READY_TIMEOUT_MS);
      const ms = performance.now() - start;
      await api('endpoint/delete', { id });
      await until(async () => containersOf(running.installationId, id).length === 0, 60_000);
      return ms;
    };

    const rows: string[][] = [];
    const times: Record<Kind, number[]> = { cache: [], plain: [] };
    for (let round = 1; round <= rounds; round += 1) {
      const order: Kind[] = round % 2 === 1 ? ['cache', 'plain'] : ['plain', 'cache'];
      const ms: Partial<Record<Kind, number>> = {};
      for (const kind of order) ms[kind] = await createToReady(kind, round);
      times.cache.push(ms.cache ?? 0);
      times.plain.push(ms.plain ?? 0);
      rows.push([
        String(round),
        order[0] ?? '',
        formatMs(ms.cache ?? 0),
        formatMs(ms.plain ?? 0),
        ((ms.cache ?? 0) / (ms.plain ?? 1)).toFixed(2),
        loadAverage(),
      ]);
    }
    const median = (values: number[]) =>
      [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
    rows.push([
      'median',
      '',
      formatMs(median(times.cache)),
      formatMs(median(times.plain)),
      (median(times.cache) / median(times.plain)).toFixed(2),
      '',
    ]);
    console.log(table(['round', 'first', 'cached model', 'plain directory', 'ratio', 'load'], rows));
  } finally {
    await server?.stop();
    if (server) removeInstallationResources(server.installationId);
    hub.stop();
    // As root, serve made the storage's hostPath a nosuid mount of its own, which outlives serve.
    spawnSync('umount', [join(dataDir, 'plain')], { stdio: 'ignore' });
    await rm(dataDir, { recursive: true, force: true });
  }
}
