/**
 * `npm run bench -- model-download`: the model cache's download rate against the hub stand-in's raw rate, in one run
 * (issue 34's target: 0.9x). The stand-in runs in its own process (test/support/hub-stand-in.ts, a generated
 * safetensors model of CORRAL_BENCH_MODEL_BYTES, 500 MB by default); rounds alternate a plain undici read of the
 * same bytes (each large file's signed URL, read and dropped) with `HubModelCache.ensure` into an empty cache (HEADs,
 * the download, sha256 as written, flushed to disk, renamed, linked). Prints each round, the medians and the load.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { request } from 'undici';
import { HubModelCache } from '../src/models/hub-cache.js';
import { HubClient } from '../src/models/hub-client.js';
import { loadAverage, table } from './support.js';

const MODEL = 'corral-bench/model';
const ROUNDS = Number(process.env.CORRAL_BENCH_ROUNDS ?? 3);

async function startStandIn(weightBytes: number): Promise<{ url: string; stop: () => void }> {
  const script = `
    import { startHubStandIn } from ${JSON.stringify(new URL('../test/support/hub-stand-in.ts', import.meta.url).href)};
    const hub = await startHubStandIn({ models: [{ name: ${JSON.stringify(MODEL)}, weightBytes: ${weightBytes}, shards: 2 }] });
    await hub.describe(${JSON.stringify(MODEL)});
    console.log(hub.url);
  `;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: fileURLToPath(new URL('..', import.meta.url)),
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.once('data', (data: Buffer) => resolve(data.toString().trim()));
    child.once('exit', (code) => reject(new Error(`the hub stand-in exited (${code})`)));
  });
  return { url, stop: () => child.kill('SIGTERM') };
}

/** The raw rate: every file's bytes read from where the hub sends them (the client's HEAD says), dropped as they arrive. */
async function rawRead(client: HubClient, commit: string, paths: string[]): Promise<number> {
  let bytes = 0;
  for (const path of paths) {
    const { location } = await client.fileMetadata(MODEL, commit, path, null);
    const { body } = await request(location);
    for await (const chunk of body) bytes += (chunk as Buffer).length;
  }
  return bytes;
}

export async function runModelDownloadBench(): Promise<void> {
  const weightBytes = Number(process.env.CORRAL_BENCH_MODEL_BYTES ?? 500_000_000);
  console.log(
    `\n## model-download: ${weightBytes} bytes of weights, ${ROUNDS} rounds, load ${loadAverage()}`,
  );
  const hub = await startStandIn(weightBytes);
  const root = await mkdtemp(join(tmpdir(), 'corral-bench-models-'));
  try {
    const client = new HubClient({ hubUrl: hub.url });
    const commit = await client.resolveCommit(MODEL, 'main', null);
    const paths = (await client.listFiles(MODEL, commit, null)).map((file) => file.path);
    const rows: string[][] = [];
    const raw: number[] = [];
    const cached: number[] = [];
    for (let round = 1; round <= ROUNDS; round += 1) {
      let began = performance.now();
      const rawBytes = await rawRead(client, commit, paths);
      const rawRate = rawBytes / ((performance.now() - began) / 1000);
      const cache = new HubModelCache({
        hubDir: join(root, String(round)),
        client,
        clock: Date.now,
        logger: pino({ level: 'silent' }),
        diskBudgetBytes: null,
        namedModels: async () => new Set(),
      });
      began = performance.now();
      const model = await cache.ensure(
        { name: MODEL, revision: 'main', allowPatterns: [], tokenSecret: null },
        null,
      );
      const cacheRate = model.bytes / ((performance.now() - began) / 1000);
      await rm(join(root, String(round)), { recursive: true, force: true });
      raw.push(rawRate);
      cached.push(cacheRate);
      rows.push([
        String(round),
        mbps(rawRate),
        mbps(cacheRate),
        (cacheRate / rawRate).toFixed(2),
        loadAverage(),
      ]);
    }
    const median = (values: number[]) =>
      [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
    rows.push([
      'median',
      mbps(median(raw)),
      mbps(median(cached)),
      (median(cached) / median(raw)).toFixed(2),
      '',
    ]);
    console.log(table(['round', 'raw read', 'cache download', 'ratio', 'load'], rows));
  } finally {
    hub.stop();
    await rm(root, { recursive: true, force: true });
  }
}

const mbps = (bytesPerSecond: number) => `${(bytesPerSecond / 1e6).toFixed(0)} MB/s`;
