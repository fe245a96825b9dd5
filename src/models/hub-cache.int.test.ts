import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream, existsSync } from 'node:fs';
import { mkdtemp, readFile, readlink, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HubStandIn, startHubStandIn } from '../../test/support/hub-stand-in.js';
import { modelRepoDir } from '../domain/model-refs.js';
import type { ModelRef } from '../domain/models.js';
import { type ModelProgress, ModelRefusedError } from '../ports/model-cache.js';
import { HubModelCache } from './hub-cache.js';
import { HubClient } from './hub-client.js';

/** The large model's weights: ~200 MB by default; CORRAL_MODEL_TEST_BYTES=2000000000 for the multi-GB run. */
const LARGE_BYTES = Number(process.env.CORRAL_MODEL_TEST_BYTES ?? 200_000_000);
const LARGE = 'corral-test/large';
const SHARED = 'corral-test/shared';
const CUT = 'corral-test/cut';
const KILLED = 'corral-test/killed';
const GATED = 'corral-test/gated';
const GRANTED = 'hf_granted';
const NOT_GRANTED = 'hf_not_granted';

let hub: HubStandIn;
let root: string;

const ref = (name: string, revision = 'main', allowPatterns: string[] = []): ModelRef => ({
  name,
  revision,
  allowPatterns,
  tokenSecret: null,
});

function cacheAt(hubDir: string, options: { budget?: number; named?: string[] } = {}): HubModelCache {
  return new HubModelCache({
    hubDir,
    client: new HubClient({ hubUrl: hub.url }),
    clock: Date.now,
    logger: pino({ level: 'silent' }),
    diskBudgetBytes: options.budget ?? null,
    namedModels: async () => new Set(options.named ?? []),
    progressEveryMs: 100,
  });
}

async function sha256Of(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/**
 * The client's offline lookup (`try_to_load_from_cache` in file_download.py), step by step: `refs/{revision}` read
 * whole (no strip: a trailing newline is a different commit), then `snapshots/{commit}/{path}` must exist.
 */
async function clientFindsOffline(
  hubDir: string,
  name: string,
  revision: string,
  path: string,
): Promise<string> {
  const repo = join(hubDir, modelRepoDir(name));
  const commit = await readFile(join(repo, 'refs', revision), 'utf8');
  const file = join(repo, 'snapshots', commit, path);
  expect(existsSync(file), `${file} resolves`).toBe(true);
  return file;
}

const cdnGets = (sha256: string) =>
  hub.requests.filter((request) => request.server === 'cdn' && request.path.startsWith(`/lfs/${sha256}`));

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'corral-models-'));
  hub = await startHubStandIn({
    models: [
      { name: LARGE, weightBytes: LARGE_BYTES, shards: 2 },
      { name: SHARED, weightBytes: 20_000_000 },
      { name: CUT, weightBytes: 20_000_000 },
      { name: KILLED, weightBytes: 40_000_000 },
      { name: GATED, weightBytes: 1_000_000, access: { kind: 'gated', tokens: [GRANTED] } },
    ],
    tokens: [NOT_GRANTED],
    treePageSize: 4,
  });
}, 120_000);
afterAll(async () => {
  await hub?.close();
  await rm(root, { recursive: true, force: true });
});

describe('the model cache against the hub stand-in', () => {
  it('downloads a model into the hub layout the client finds offline, then serves it again with no byte fetched', async () => {
    const hubDir = join(root, 'large');
    const cache = cacheAt(hubDir);
    const reports: ModelProgress[] = [];
    const cached = await cache.ensure(ref(LARGE), null, (progress) => reports.push(progress));
    const { commit, files } = await hub.describe(LARGE);

    expect(cached).toMatchObject({ name: LARGE, revision: 'main', commit, files: files.length });
    expect(cached.bytes).toBe(files.reduce((sum, file) => sum + file.size, 0));
    expect(reports.at(-1)).toMatchObject({ bytesDone: cached.bytes, bytesTotal: cached.bytes });
    expect(reports.some((report) => report.bytesPerSecond > 0)).toBe(true);
    // The ref holds the commit and nothing else: the client reads it without stripping.
    expect(await readFile(join(cached.repoDir, 'refs', 'main'), 'utf8')).toBe(commit);
    for (const file of files) {
      const path = await clientFindsOffline(hubDir, LARGE, 'main', file.path);
      const blob = file.sha256 ?? file.blobId;
      expect(await readlink(path)).toBe(`${'../'.repeat(file.path.split('/').length + 1)}blobs/${blob}`);
      if (file.sha256) expect(await sha256Of(path)).toBe(file.sha256);
      expect((await stat(path)).size).toBe(file.size);
    }
    expect(hub.requests.filter((r) => r.server === 'cdn').every((r) => r.authorization === null)).toBe(true);

    const sentBefore = hub.cdnBytesSent();
    const again = await cacheAt(hubDir).ensure(ref(LARGE, 'v1.0'), null);
    expect(again.commit).toBe(commit);
    expect(hub.cdnBytesSent()).toBe(sentBefore);
    expect(await readFile(join(cached.repoDir, 'refs', 'v1.0'), 'utf8')).toBe(commit);
  }, 600_000);

  it('resolves refs/pr/1 to its own commit, sharing the blobs that did not change', async () => {
    const hubDir = join(root, 'large');
    const sentBefore = hub.cdnBytesSent();
    const cached = await cacheAt(hubDir).ensure(ref(LARGE, 'refs/pr/1'), null);
    expect(cached.commit).toBe((await hub.describe(LARGE, 'refs/pr/1')).commit);
    expect(hub.cdnBytesSent()).toBe(sentBefore);
    const config = await clientFindsOffline(hubDir, LARGE, 'refs/pr/1', 'config.json');
    expect(JSON.parse(await readFile(config, 'utf8')).hidden_size).toBe(128);
  });

  it('shares one download between two callers of the same model', async () => {
    const cache = cacheAt(join(root, 'shared'));
    const { files } = await hub.describe(SHARED);
    const weights = files.find((file) => file.sha256 !== null);
    hub.pause();
    const first = cache.ensure(ref(SHARED), null);
    await expect
      .poll(() => cdnGets(weights?.sha256 ?? '').length + hub.requests.length, { timeout: 10_000 })
      .toBeGreaterThan(0);
    await expect.poll(() => cache.progress(ref(SHARED)), { timeout: 10_000 }).not.toBeNull();
    const second = cache.ensure(ref(SHARED, 'main', ['*.safetensors']), null);
    hub.resume();
    const [a, b] = await Promise.all([first, second]);
    expect(a.commit).toBe(b.commit);
    expect(
      cdnGets(weights?.sha256 ?? ''),
      JSON.stringify(cdnGets(weights?.sha256 ?? '').map((r) => [r.range, r.status, r.authorization])),
    ).toHaveLength(1);
  });

  it('resumes a file whose connection was cut with a Range request, fetching each byte once', async () => {
    const { files } = await hub.describe(CUT);
    const weights = files.find((file) => file.sha256 !== null);
    const sentBefore = hub.cdnBytesSent();
    hub.cutNextDownload(7_000_000, weights?.sha256 ?? undefined);
    const cached = await cacheAt(join(root, 'cut')).ensure(ref(CUT, 'main', ['*.safetensors']), null);
    expect(cached.bytes).toBe(weights?.size);
    expect(cdnGets(weights?.sha256 ?? '').map((request) => request.range)).toEqual([null, 'bytes=7000000-']);
    expect(hub.cdnBytesSent() - sentBefore).toBe(weights?.size);
  });

  it('resumes after the process that was downloading is killed with SIGKILL', async () => {
    const hubDir = join(root, 'killed');
    const { files } = await hub.describe(KILLED);
    const weights = files.find((file) => file.sha256 !== null);
    const incomplete = join(hubDir, modelRepoDir(KILLED), 'blobs', `${weights?.sha256}.incomplete`);
    hub.setBytesPerSecond(10_000_000);
    const moduleUrl = (path: string) => new URL(path, import.meta.url).href;
    const script = `
      import { pino } from 'pino';
      import { HubClient } from ${JSON.stringify(moduleUrl('./hub-client.ts'))};
      import { HubModelCache } from ${JSON.stringify(moduleUrl('./hub-cache.ts'))};
      const cache = new HubModelCache({ hubDir: ${JSON.stringify(hubDir)}, client: new HubClient({ hubUrl: ${JSON.stringify(hub.url)} }),
        clock: Date.now, logger: pino({ level: 'silent' }), diskBudgetBytes: null, namedModels: async () => new Set() });
      await cache.ensure({ name: ${JSON.stringify(KILLED)}, revision: 'main', allowPatterns: ['*.safetensors'], tokenSecret: null }, null);
    `;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: fileURLToPath(new URL('../..', import.meta.url)),
      stdio: 'inherit',
    });
    try {
      await expect
        .poll(async () => (await stat(incomplete).catch(() => ({ size: 0 }))).size, {
          timeout: 60_000,
          interval: 100,
        })
        .toBeGreaterThan(8_000_000);
    } finally {
      child.kill('SIGKILL');
    }
    await new Promise((resolve) => child.once('exit', resolve));
    const left = (await stat(incomplete)).size;
    expect(left).toBeLessThan(weights?.size ?? 0);

    // Still at 10 MB/s: the bytes found on disk count as done, not as speed (read at once, they would add GB/s).
    const reports: ModelProgress[] = [];
    const cached = await cacheAt(hubDir)
      .ensure(ref(KILLED, 'main', ['*.safetensors']), null, (report) => reports.push(report))
      .finally(() => hub.setBytesPerSecond(null));
    expect(cached.bytes).toBe(weights?.size);
    // The first report is the download's start (nothing found yet); the next counts the bytes it resumed from.
    expect(reports[0]).toMatchObject({ bytesDone: 0, bytesPerSecond: 0 });
    expect(reports[1]?.bytesDone).toBeGreaterThanOrEqual(left);
    expect(Math.max(...reports.map((report) => report.bytesPerSecond))).toBeLessThan(20_000_000);
    expect(cdnGets(weights?.sha256 ?? '').at(-1)?.range).toBe(`bytes=${left}-`);
    expect(await sha256Of(join(hubDir, modelRepoDir(KILLED), 'blobs', weights?.sha256 ?? ''))).toBe(
      weights?.sha256,
    );
  }, 120_000);

  it('refuses a gated model without a granted token, even once another owner has cached it', async () => {
    const cache = cacheAt(join(root, 'gated'));
    expect(await cache.check(ref(GATED), null)).toMatchObject({ code: 'MODEL_GATED' });
    await expect(cache.ensure(ref(GATED), null)).rejects.toThrow(ModelRefusedError);
    const cached = await cache.ensure(ref(GATED), GRANTED);
    expect(cached.files).toBeGreaterThan(0);

    const sentBefore = hub.cdnBytesSent();
    for (const [token, code] of [
      [null, 'MODEL_GATED'],
      [NOT_GRANTED, 'MODEL_GATED'],
      ['hf_unknown', 'MODEL_UNAUTHORIZED'],
    ] as const) {
      const refusal = await cache.ensure(ref(GATED), token).catch((error: unknown) => error);
      expect(refusal).toBeInstanceOf(ModelRefusedError);
      expect((refusal as ModelRefusedError).refusal.code).toBe(code);
    }
    expect(await cache.check(ref('corral-test/none'), null)).toMatchObject({ code: 'MODEL_NOT_FOUND' });
    expect(await cache.check(ref(GATED, 'no-such-branch'), GRANTED)).toMatchObject({
      code: 'MODEL_NOT_FOUND',
    });
    expect(hub.cdnBytesSent()).toBe(sentBefore);
  });

  it('evicts the least recently used model no endpoint names once over its disk budget', async () => {
    const hubDir = join(root, 'budget');
    const unbounded = cacheAt(hubDir);
    await unbounded.ensure(ref(CUT, 'main', ['*.safetensors']), null);
    await unbounded.ensure(ref(SHARED, 'main', ['*.safetensors']), null);
    await unbounded.ensure(ref(GATED), GRANTED);
    // Room for two of the three: CUT is the oldest but named; SHARED goes.
    const bounded = cacheAt(hubDir, { budget: 41_000_000, named: [CUT] });
    expect(await bounded.enforceBudget()).toEqual([SHARED]);
    expect((await bounded.list()).map((model) => model.name).sort()).toEqual([CUT, GATED].sort());
  });
});
