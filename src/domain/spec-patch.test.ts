import { describe, expect, it } from 'vitest';
import { fallsBackToRoot } from './health-path.js';
import { DEFAULT_LIMITS, type Limits } from './limits.js';
import {
  applyPatch,
  clampInto,
  createSpec,
  defaultScaling,
  defaultSpec,
  defaultWorkers,
} from './spec-patch.js';
import { validateSpec } from './validate.js';

const limits = (overrides: Partial<Limits> = {}): Limits => ({
  ...structuredClone(DEFAULT_LIMITS),
  cudaVersions: ['12.4'],
  ...overrides,
});

describe('create defaults', () => {
  it.each([
    [5, { min: 1, max: 10 }, 5],
    [0, { min: 1, max: 10 }, 1],
    [60, { min: 120, max: 3600 }, 120],
    [300, { min: 1, max: 120 }, 120],
    [4, { min: 4, max: 4 }, 4],
  ])('clampInto(%d, %j) is %d', (value, range, clamped) => {
    expect(clampInto(value, range)).toBe(clamped);
  });

  it('are the fixed defaults with the default limits', () => {
    expect(defaultWorkers(limits())).toEqual({
      minWorkers: 0,
      maxWorkers: 1,
      idleTimeoutSeconds: 60,
      maxConcurrent: 1,
      gpusPerWorker: 1,
      cudaVersion: 'any',
      requestTimeoutSeconds: 300,
      keepFrozenSeconds: 0,
      keepSuspendedSeconds: 0,
    });
    expect(defaultScaling('queue', limits())).toEqual({ type: 'queue', value: 4 });
    expect(defaultScaling('concurrency', limits())).toEqual({ type: 'concurrency', value: 4 });
  });

  /** [what the operator narrowed, the narrowed limits, what the default becomes] */
  const NARROWED: [string, Partial<Limits>, (spec: ReturnType<typeof defaultSpec>) => unknown, unknown][] = [
    [
      'minFreeTimeout 120',
      { idleTimeoutSeconds: { min: 120, max: 3600 } },
      (s) => s.workers.idleTimeoutSeconds,
      120,
    ],
    [
      'maxFreeTimeout 30',
      { idleTimeoutSeconds: { min: 1, max: 30 } },
      (s) => s.workers.idleTimeoutSeconds,
      30,
    ],
    [
      'minWorkerNum 2',
      { workers: { min: 2, max: 20 } },
      (s) => [s.workers.minWorkers, s.workers.maxWorkers],
      [2, 2],
    ],
    [
      'maxWorkerNum 0',
      { workers: { min: 0, max: 0 } },
      (s) => [s.workers.minWorkers, s.workers.maxWorkers],
      [0, 0],
    ],
    ['minConcurrencyNum 8', { concurrency: { min: 8, max: 256 } }, (s) => s.workers.maxConcurrent, 8],
    ['minGPUNum 2', { gpus: { min: 2, max: 8 } }, (s) => s.workers.gpusPerWorker, 2],
    [
      'maxRequestTimeout 60',
      { requestTimeoutSeconds: { min: 1, max: 60 } },
      (s) => s.workers.requestTimeoutSeconds,
      60,
    ],
    [
      'minRequestTimeout 600',
      { requestTimeoutSeconds: { min: 600, max: 3600 } },
      (s) => s.workers.requestTimeoutSeconds,
      600,
    ],
    [
      'minQueueWaitTime 10',
      { queueWaitSeconds: { min: 10, max: 300 } },
      (s) => s.scaling,
      { type: 'queue', value: 10 },
    ],
    [
      'maxQueueWaitTime 2',
      { queueWaitSeconds: { min: 1, max: 2 } },
      (s) => s.scaling,
      { type: 'queue', value: 2 },
    ],
    ['freeRootfsSize 50', { rootfsSizeGB: { min: 20, max: 200, free: 50 } }, (s) => s.rootfsSizeGB, 50],
  ];

  it.each(NARROWED)('follow a narrowed range: %s', (_what, narrowed, read, expected) => {
    const spec = defaultSpec('ep', limits(narrowed));
    expect(read(spec)).toEqual(expected);
  });

  it.each(NARROWED)('never make a create that leaves the field out invalid: %s', (_what, narrowed) => {
    const l = limits(narrowed);
    const spec = createSpec('ep', l, { image: { ref: 'x/y:1' }, port: 8000 });
    const catalog = {
      productIds: new Set<string>(),
      networkStorages: new Map(),
      credentialIds: new Set<string>(),
    };
    expect(validateSpec(spec, l, catalog)).toEqual([]);
  });

  it('take the policy value from the range of the type the request names', () => {
    const l = limits({ queueWaitSeconds: { min: 30, max: 300 }, requestCount: { min: 10, max: 100 } });
    expect(createSpec('ep', l, { scaling: { type: 'concurrency' } }).scaling).toEqual({
      type: 'concurrency',
      value: 10,
    });
    expect(createSpec('ep', l, {}).scaling).toEqual({ type: 'queue', value: 30 });
    expect(createSpec('ep', l, { scaling: { type: 'concurrency', value: 50 } }).scaling.value).toBe(50);
  });

  it('keep what the request sends, in range or not (validation judges it)', () => {
    const l = limits({ idleTimeoutSeconds: { min: 120, max: 3600 } });
    expect(createSpec('ep', l, { workers: { idleTimeoutSeconds: 60 } }).workers.idleTimeoutSeconds).toBe(60);
  });
});

describe("a queue endpoint's health path", () => {
  const create = (patch: Parameters<typeof createSpec>[2]) =>
    createSpec('ep', limits(), { image: { ref: 'x:1' }, port: 8000, ...patch });

  it('is none unless the spec names one (no HTTP probe), and /health on an http endpoint', () => {
    expect(create({ type: 'queue' }).health.path).toBe('');
    expect(create({ type: 'queue', health: { periodSeconds: 5 } }).health).toMatchObject({
      path: '',
      periodSeconds: 5,
    });
    expect(create({ type: 'queue', health: { path: '/ready' } }).health.path).toBe('/ready');
    expect(create({}).health.path).toBe('/health');
    expect(create({ type: 'queue', health: 'reset' }).health.path).toBe('');
  });

  it("follows a change of type when it was the old type's default, and stays when it was named", () => {
    const queue = create({ type: 'queue' });
    expect(applyPatch(queue, { type: 'http' }).health.path).toBe('/health');
    expect(applyPatch(create({}), { type: 'queue' }).health.path).toBe('');
    const named = create({ type: 'queue', health: { path: '/ready' } });
    expect(applyPatch(named, { type: 'http' }).health.path).toBe('/ready');
    expect(applyPatch(queue, { type: 'http', health: { path: '/up' } }).health.path).toBe('/up');
    expect(applyPatch(named, { health: 'reset' }).health.path).toBe('');
  });

  it('falls back to / only on the default path of an http endpoint, never on a path the owner named', () => {
    expect(fallsBackToRoot(create({}))).toBe(true);
    expect(fallsBackToRoot(create({ health: { periodSeconds: 5 } }))).toBe(true);
    // Named, even as the default's own spelling: an explicit path always wins.
    const named = create({ health: { path: '/health' } });
    expect(fallsBackToRoot(named)).toBe(false);
    expect(fallsBackToRoot(applyPatch(named, { health: { periodSeconds: 5 } }))).toBe(false);
    expect(fallsBackToRoot(applyPatch(named, { health: 'reset' }))).toBe(true);
    expect(fallsBackToRoot(create({ health: { path: '/ready' } }))).toBe(false);
    expect(fallsBackToRoot(applyPatch(create({ type: 'queue' }), { type: 'http' }))).toBe(true);
  });

  it("validates '' on a queue endpoint only", () => {
    const fields = (spec: ReturnType<typeof create>) =>
      validateSpec(spec, limits(), {
        productIds: new Set<string>(),
        networkStorages: new Map(),
        credentialIds: new Set<string>(),
      }).map((issue) => [issue.field, issue.message]);
    expect(fields(create({ type: 'queue' }))).not.toContainEqual(expect.arrayContaining(['health.path']));
    expect(fields({ ...create({}), health: { ...create({}).health, path: '' } })).toContainEqual([
      'health.path',
      'health path must start with "/"',
    ]);
    expect(fields(create({ type: 'queue', health: { path: 'ready' } }))).toContainEqual([
      'health.path',
      'health path must start with "/" (or be empty: no HTTP probe)',
    ]);
  });
});
