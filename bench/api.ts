/**
 * API benchmark (issue: control plane). For SQLite (a temp file in WAL mode, as `corral serve` opens it) and
 * PostgreSQL (when CORRAL_TEST_DATABASE_URL is set; a fresh schema, dropped after), it builds the real API
 * with buildApi, listens on 127.0.0.1 port 0, seeds 10,000 endpoints of one owner and measures create, get
 * and list of one page of 100 over real HTTP (keep-alive, one request in flight), each next to GET /healthz
 * on the same server and client as the baseline. Design target: list p99 under 20 ms.
 */
import { randomBytes, randomInt } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import pino from 'pino';
import { buildApi } from '../src/app/build-api.js';
import { loadConfig } from '../src/config/config.js';
import { SecretBox } from '../src/crypto/secret-box.js';
import type { Endpoint } from '../src/domain/endpoint.js';
import type { Limits } from '../src/domain/limits.js';
import { applyPatch, defaultSpec } from '../src/domain/spec-patch.js';
import { validateSpec } from '../src/domain/validate.js';
import { simulatedInventory, supportedCudaVersions } from '../src/gpu/inventory.js';
import { createLogger } from '../src/logger.js';
import { ApiKeyService } from '../src/service/api-key-service.js';
import { randomIds } from '../src/service/ids.js';
import {
  eachScratchStore,
  openPostgresScratch,
  openSqliteScratch,
  type ScratchStore,
} from './scratch-store.js';
import {
  type Bounds,
  Figure,
  formatMs,
  formatRatio,
  type HttpAnswer,
  interleave,
  LoopbackClient,
  loadAverage,
  summarize,
  table,
} from './support.js';

const PREFIX = '/gpu-instance/openapi/v1';
const OWNER = 'bench';
const SEEDED = 10_000;
const PAGE_SIZE = 100;
const PAGES = SEEDED / PAGE_SIZE;
/** Each read figure: at most 1,000 requests and 30 s; create: 500 requests (the brief's sample) and 30 s. */
const READS: Bounds = { count: 1000, maxMs: 30_000 };
const CREATES: Bounds = { count: 500, maxMs: 30_000 };
const WARMUP: Bounds = { count: 200, maxMs: 10_000 };
/** Postgres's list on the freshly seeded table, before VACUUM ANALYZE: a smaller sample. */
const FRESH: Bounds = { count: 300, maxMs: 15_000 };
/** The breakdown of list by page depth: a smaller sample each. */
const DEPTH: Bounds = { count: 300, maxMs: 15_000 };
/** Figures measured together are interleaved in this many rounds. */
const ROUNDS = 10;
const SEED_MAX_MS = 180_000;
const LIST_P99_TARGET_MS = 20;

/**
 * The operator raises the per-key rate limit (default 50/s) so that one benchmarking key is never throttled, and the
 * owner's endpoint, worker and GPU quotas (defaults: 100 endpoints, 100 workers, four times the inventory's GPUs)
 * so that creates beside the 10,000 seeded endpoints are not refused.
 */
const CONFIG_TEXT =
  'rateLimit: {requestsPerSecond: 1000000, burst: 1000000}\nquotas: {endpoints: unlimited, maxGpus: unlimited, workers: unlimited}\n';

interface StoreUnderTest extends ScratchStore {
  /** Seeding concurrency: SQLite's driver is synchronous, Postgres has a pool of connections. */
  seedConcurrency: number;
  /** Brings the seeded table to the state a running server keeps it in (Postgres: VACUUM ANALYZE). */
  settle?: () => Promise<void>;
  settleWhat?: string;
}

async function openSqlite(): Promise<StoreUnderTest> {
  return { ...(await openSqliteScratch()), seedConcurrency: 1 };
}

async function openPostgres(connectionString: string): Promise<StoreUnderTest> {
  const scratch = await openPostgresScratch(connectionString);
  return {
    ...scratch,
    seedConcurrency: 8,
    async settle() {
      await sql`vacuum analyze endpoints`.execute(scratch.connection.db);
    },
    settleWhat: 'VACUUM ANALYZE endpoints (what autovacuum does on its own after a bulk insert)',
  };
}

export async function runApiBench(): Promise<void> {
  const postgresUrl = process.env.CORRAL_TEST_DATABASE_URL;
  console.log('\n== API (issue: control plane) ==');
  console.log(
    `command: ${postgresUrl ? 'CORRAL_TEST_DATABASE_URL=<url> ' : ''}npm run bench -- api` +
      (postgresUrl ? '' : '   (PostgreSQL skipped: set CORRAL_TEST_DATABASE_URL to include it)'),
  );
  console.log(
    `each store: ${SEEDED.toLocaleString('en')} endpoints of one owner; reads ${READS.count} requests ` +
      `(at most ${READS.maxMs / 1000} s) per figure, create ${CREATES.count} (at most ${CREATES.maxMs / 1000} s); ` +
      'one request in flight over keep-alive HTTP on 127.0.0.1',
  );
  await eachScratchStore(postgresUrl, { sqlite: openSqlite, postgres: openPostgres }, benchOne);
}

async function benchOne(target: StoreUnderTest): Promise<void> {
  const { store } = target;
  const config = loadConfig({
    flags: { gpus: 'h100-80g:8', dataDir: target.dataDir, config: '/bench/corral.yaml' },
    env: {},
    readFile: () => CONFIG_TEXT,
  });
  const gpus = config.gpus.kind === 'simulated' ? simulatedInventory(config.gpus.groups) : [];
  // Logs as `corral serve` writes them (info level, same redaction), into /dev/null.
  const logger = createLogger({
    level: 'info',
    destination: pino.destination({ dest: '/dev/null', sync: false }),
  });
  const app = await buildApi({
    config,
    store,
    gpus,
    logger,
    secrets: new SecretBox({ key: randomBytes(32) }),
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const client = new LoopbackClient((app.server.address() as AddressInfo).port);
  try {
    const owner = await new ApiKeyService({ store, clock: () => Date.now() }).create({
      ownerId: OWNER,
      name: 'bench',
      admin: false,
    });
    const limits = { ...config.limits, cudaVersions: supportedCudaVersions(gpus) };
    const seedStart = performance.now();
    const ids = await seed(target, owner.id, limits);
    const seedMs = performance.now() - seedStart;
    console.log(`\n${target.describe}`);
    console.log(
      `seeded ${SEEDED.toLocaleString('en')} endpoints through the store in ${(seedMs / 1000).toFixed(1)} s; ` +
        `load average ${loadAverage()}`,
    );

    const token = owner.key;
    const listBytes: number[] = [];
    const healthz = (label: string, bounds = READS) =>
      new Figure(label, bounds, () => client.send('GET', '/healthz'), expectStatus(200));
    const get = new Figure(
      'GET endpoint?id= (get)',
      READS,
      () => client.send('GET', `${PREFIX}/endpoint?id=${ids[randomInt(ids.length)]}`, { token }),
      expectStatus(200),
    );
    /** A random page of 100 (the target's figure), or always the given page. */
    const list = (label: string, bounds = READS, page?: number) =>
      new Figure(
        label,
        bounds,
        () =>
          client.send(
            'GET',
            `${PREFIX}/endpoints?pageSize=${PAGE_SIZE}&pageNum=${page ?? randomInt(PAGES)}`,
            {
              token,
            },
          ),
        (answer) => {
          listBytes.push(Buffer.byteLength(answer.body));
          if (answer.status !== 200) return `status ${answer.status}: ${answer.body.slice(0, 200)}`;
          const body = JSON.parse(answer.body) as { endpoints: unknown[]; total: number };
          return body.endpoints.length === PAGE_SIZE && body.total === SEEDED
            ? undefined
            : `page of ${body.endpoints.length}, total ${body.total}`;
        },
      );
    let created = 0;
    const create = new Figure(
      'POST endpoint/create',
      CREATES,
      () =>
        client.send('POST', `${PREFIX}/endpoint/create`, {
          token,
          body: createBody(`bench-http-${created++}`),
        }),
      (answer) => {
        if (answer.status !== 200) return `status ${answer.status}: ${answer.body.slice(0, 200)}`;
        const id = (JSON.parse(answer.body) as { id?: unknown }).id;
        return typeof id === 'string' ? undefined : answer.body;
      },
    );

    // Warm up the JIT, the connection and the database's caches; not measured.
    await interleave([healthz('warm-up', WARMUP), list('warm-up', WARMUP)], 1);

    const phases: Figure[][] = [];
    if (target.settle) {
      // Right after a bulk insert Postgres has neither statistics nor a visibility map for the table;
      // autovacuum provides both soon after on a running server. Shown apart, before that happens.
      const fresh = [
        healthz('GET /healthz (baseline)', FRESH),
        list(`GET endpoints?pageSize=${PAGE_SIZE}, fresh table`, FRESH),
      ];
      await interleave(fresh, ROUNDS);
      phases.push(fresh);
      await target.settle();
      console.log(`then ${target.settleWhat}`);
    }
    // Reads while the owner has exactly 10,000 endpoints; then creates (which add up to 500 more).
    const reads = [
      healthz('GET /healthz (baseline)'),
      get,
      list(`GET endpoints?pageSize=${PAGE_SIZE} (list)`),
      // How much the page's depth costs (OFFSET): the first and the last page alone, as a breakdown.
      list('  of which pageNum=0 only', DEPTH, 0),
      list(`  of which pageNum=${PAGES - 1} only`, DEPTH, PAGES - 1),
    ];
    await interleave(reads, ROUNDS);
    phases.push(reads);
    const writes = [healthz('GET /healthz (baseline)', CREATES), create];
    await interleave(writes, ROUNDS);
    phases.push(writes);
    report(phases, listBytes);
  } finally {
    client.close();
    await app.close();
  }
}

function expectStatus(status: number) {
  return (answer: HttpAnswer) =>
    answer.status === status ? undefined : `status ${answer.status}: ${answer.body.slice(0, 200)}`;
}

/** Inserts valid endpoints through the store (as the service would write them), newest last. */
async function seed(target: StoreUnderTest, keyId: string, limits: Limits): Promise<string[]> {
  const base = Date.now() - SEEDED * 1000;
  const deadline = performance.now() + SEED_MAX_MS;
  const ids: string[] = [];
  const catalog = {
    productIds: new Set(['h100-80g']),
    networkStorages: new Map(),
    credentialIds: new Set<string>(),
  };
  let next = 0;
  const worker = async () => {
    while (next < SEEDED) {
      if (performance.now() > deadline) throw new Error(`seeding took over ${SEED_MAX_MS / 1000} s`);
      const i = next++;
      const endpoint = seededEndpoint(i, base + i * 1000, limits);
      const issues = validateSpec(endpoint.spec, limits, catalog);
      if (issues.length > 0) throw new Error(`seeded spec is invalid: ${JSON.stringify(issues)}`);
      await target.store.endpoints.create(
        endpoint,
        [{ at: endpoint.createdAt, type: 'created', message: 'endpoint created', data: { revision: 1 } }],
        {
          at: endpoint.createdAt,
          ownerId: OWNER,
          actor: keyId,
          action: 'endpoint.create',
          targetId: endpoint.id,
        },
      );
      ids.push(endpoint.id);
    }
  };
  await Promise.all(Array.from({ length: target.seedConcurrency }, worker));
  return ids;
}

function seededEndpoint(i: number, at: number, limits: Limits): Endpoint {
  const id = randomIds.endpoint();
  const spec = applyPatch(defaultSpec(id, limits), {
    name: `bench-${i}`,
    workers: { minWorkers: 0, maxWorkers: 2, idleTimeoutSeconds: 300, maxConcurrent: 2, gpusPerWorker: 1 },
    port: 8000,
    scaling: { type: 'queue', value: 60 },
    image: { ref: 'registry.example.com/bench/worker:1.0', command: 'python serve.py' },
    productIds: ['h100-80g'],
    volumes: [{ type: 'local', sizeGB: 30, mountPath: '/data' }],
    env: [{ key: 'MODEL', value: `model-${i}` }],
    health: { path: '/health' },
  });
  return {
    id,
    ownerId: OWNER,
    spec,
    revision: 1,
    desired: 'running',
    status: { state: 'deploying', error: '', message: 'waiting for workers' },
    createdAt: at,
    updatedAt: at,
  };
}

/** The body a client of the original service sends (see test/support/api.ts). */
function createBody(name: string): string {
  return JSON.stringify({
    endpoint: {
      name,
      workerConfig: [{ minNum: 0, maxNum: 2, freeTimeout: 300, maxConcurrent: 2, gpuNum: 1 }],
      ports: [{ port: '8000' }],
      policy: [{ type: 'queue', value: 60 }],
      image: [{ image: 'registry.example.com/bench/worker:1.0', authId: '', command: 'python serve.py' }],
      products: [{ id: 'h100-80g' }],
      rootfsSize: 100,
      volumeMounts: [{ type: 'local', size: 30, id: '', mountPath: '/data' }],
      clusterID: '',
      envs: [{ key: 'MODEL', value: name }],
      healthy: { path: '/health' },
    },
  });
}

/** One table per store: each phase's figures with their ratios to the healthz baseline measured beside them. */
function report(phases: Figure[][], listBytes: number[]): void {
  const rows: string[][] = [];
  const verdicts: string[] = [];
  for (const figures of phases) {
    const baseline = figures[0] ? summarize(figures[0].ms) : undefined;
    for (const figure of figures) {
      const s = summarize(figure.ms);
      rows.push([
        figure.label + (figure.cut ? ' (time bound hit)' : ''),
        String(s.n),
        formatMs(s.p50),
        formatMs(s.p99),
        formatMs(s.mean),
        formatMs(s.max),
        baseline && figure !== figures[0] ? formatRatio(s.p50 / baseline.p50) : '',
        baseline && figure !== figures[0] ? formatRatio(s.p99 / baseline.p99) : '',
        String(figure.failures),
      ]);
      if (figure.label.startsWith('GET endpoints') && figure.bounds !== DEPTH) {
        const met = s.p99 < LIST_P99_TARGET_MS && figure.failures === 0;
        verdicts.push(
          `target: list one page of ${PAGE_SIZE} among ${SEEDED.toLocaleString('en')}, p99 under ` +
            `${LIST_P99_TARGET_MS} ms [${figure.label}]: ${met ? 'PASS' : 'MISS'} (p99 ${formatMs(s.p99)} ms` +
            `${met ? '' : `, ${formatMs(s.p99 - LIST_P99_TARGET_MS)} ms over`}` +
            `${figure.failures ? `, ${figure.failures} failed` : ''})`,
        );
      }
    }
  }
  console.log(
    table(['figure', 'n', 'p50 ms', 'p99 ms', 'mean ms', 'max ms', 'p50/base', 'p99/base', 'failed'], rows),
  );
  for (const figure of phases.flat()) {
    if (figure.firstFailure) console.log(`  ${figure.label}: first failure: ${figure.firstFailure}`);
  }
  const meanBytes = listBytes.reduce((a, b) => a + b, 0) / Math.max(1, listBytes.length);
  console.log(`list answers average ${(meanBytes / 1024).toFixed(0)} KiB of JSON (page of ${PAGE_SIZE})`);
  console.log(`load average after: ${loadAverage()}`);
  for (const verdict of verdicts) console.log(verdict);
}
