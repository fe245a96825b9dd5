/**
 * The quota arithmetic: each endpoint's use, what a create or update would make it, a count quota's next save, the
 * defaults, overrides, and the operator's quota (no default GPU quota) with where each value comes from.
 */
import { describe, expect, it } from 'vitest';
import {
  countQuotaBreach,
  defaultQuota,
  type EndpointUse,
  endpointQuotaBreach,
  endpointUse,
  jobQuotaBreach,
  NO_ENDPOINT_USE,
  type Quota,
  quotaFor,
  UNLIMITED,
} from './quota.js';

const QUOTA: Quota = {
  endpoints: 3,
  minGpus: 4,
  maxGpus: 8,
  workers: 6,
  credentials: 2,
  secrets: 5,
  invokeKeys: 0,
  queuedJobs: 3,
  jobBytes: 1_000,
};
const use = (endpoints: number, minGpus: number, maxGpus: number, workers: number): EndpointUse => ({
  endpoints,
  minGpus,
  maxGpus,
  workers,
});
const shape = (minWorkers: number, maxWorkers: number, gpusPerWorker: number) =>
  endpointUse({ minWorkers, maxWorkers, gpusPerWorker });

describe('endpointUse', () => {
  it.each([
    [0, 2, 1, use(1, 0, 2, 2)],
    [2, 3, 2, use(1, 4, 6, 3)],
    [1, 1, 0, use(1, 0, 0, 1)],
  ])('minNum %i, maxNum %i, gpuNum %i counts %o', (min, max, gpus, expected) => {
    expect(shape(min, max, gpus)).toEqual(expected);
  });
});

describe('endpointQuotaBreach', () => {
  it.each([
    ['a first create that fits', NO_ENDPOINT_USE, undefined, shape(2, 4, 2), undefined],
    ['a create up to every limit exactly', use(2, 2, 4, 4), undefined, shape(1, 2, 2), undefined],
    [
      'a create past the endpoint count',
      use(3, 0, 0, 0),
      undefined,
      shape(0, 1, 1),
      { quota: 'endpoints', limit: 3, used: 3, usedAfter: 4 },
    ],
    [
      'a create holding too many GPUs by minNum',
      use(1, 2, 2, 2),
      undefined,
      shape(3, 3, 1),
      { quota: 'minGpus', limit: 4, used: 2, usedAfter: 5 },
    ],
    [
      'a create reaching too many GPUs by maxNum',
      use(1, 0, 6, 3),
      undefined,
      shape(0, 3, 1),
      { quota: 'maxGpus', limit: 8, used: 6, usedAfter: 9 },
    ],
    [
      'a create with too many workers (gpuNum 0)',
      use(1, 0, 0, 5),
      undefined,
      shape(0, 2, 0),
      { quota: 'workers', limit: 6, used: 5, usedAfter: 7 },
    ],
    // Updates: the endpoint's own use is part of the current use and replaced by its new one.
    ['an update that keeps the use', use(3, 4, 8, 6), shape(2, 4, 2), shape(2, 4, 2), undefined],
    [
      'an update moving GPUs from maxNum to minNum',
      use(1, 2, 8, 4),
      shape(1, 4, 2),
      shape(2, 4, 2),
      undefined,
    ],
    [
      'an update raising minNum past the quota',
      use(2, 4, 4, 4),
      shape(1, 2, 2),
      shape(2, 2, 2),
      { quota: 'minGpus', limit: 4, used: 4, usedAfter: 6 },
    ],
    // A quota lowered below the use: what shrinks or stays is admitted, what grows is not.
    [
      'an update shrinking an owner above its quota',
      use(5, 6, 10, 8),
      shape(3, 5, 2),
      shape(2, 4, 2),
      undefined,
    ],
    [
      'an update of other fields of an owner above its quota',
      use(5, 6, 10, 8),
      shape(3, 5, 2),
      shape(3, 5, 2),
      undefined,
    ],
    [
      'an update growing an owner above its quota',
      use(5, 6, 10, 8),
      shape(1, 1, 2),
      shape(2, 2, 2),
      { quota: 'minGpus', limit: 4, used: 6, usedAfter: 8 },
    ],
  ])('%s', (_case, current, before, after, expected) => {
    expect(endpointQuotaBreach(QUOTA, current, before, after)).toEqual(expected);
  });

  it('never refuses what an unlimited quota counts', () => {
    const unlimited = { ...QUOTA, minGpus: UNLIMITED, maxGpus: UNLIMITED };
    expect(endpointQuotaBreach(unlimited, use(1, 1000, 5000, 5), undefined, shape(1, 1, 8))).toBeUndefined();
  });
});

describe('countQuotaBreach', () => {
  it.each([
    ['credentials', 0, undefined],
    ['credentials', 1, undefined],
    ['credentials', 2, { quota: 'credentials', limit: 2, used: 2, usedAfter: 3 }],
    ['secrets', 4, undefined],
    ['secrets', 5, { quota: 'secrets', limit: 5, used: 5, usedAfter: 6 }],
    ['invokeKeys', 0, { quota: 'invokeKeys', limit: 0, used: 0, usedAfter: 1 }],
  ] as const)('%s with %i saved: %o', (name, saved, expected) => {
    expect(countQuotaBreach(QUOTA, name, saved)).toEqual(expected);
  });
});

describe('jobQuotaBreach', () => {
  it.each([
    ['a job that fits both', { queuedJobs: 2, jobBytes: 900 }, 100, undefined],
    [
      'a job past the count',
      { queuedJobs: 3, jobBytes: 0 },
      1,
      { quota: 'queuedJobs', limit: 3, used: 3, usedAfter: 4 },
    ],
    [
      'a job whose input would take the kept bytes past their quota',
      { queuedJobs: 0, jobBytes: 950 },
      51,
      { quota: 'jobBytes', limit: 1_000, used: 950, usedAfter: 1_001 },
    ],
    [
      'a job of an owner above its quota already (lowered since)',
      { queuedJobs: 9, jobBytes: 0 },
      1,
      { quota: 'queuedJobs', limit: 3, used: 9, usedAfter: 10 },
    ],
  ] as const)('%s', (_case, use, inputBytes, expected) => {
    expect(jobQuotaBreach(QUOTA, use, inputBytes)).toEqual(expected);
  });

  it('never refuses what an unlimited quota counts', () => {
    const unlimited = { ...QUOTA, queuedJobs: UNLIMITED, jobBytes: UNLIMITED };
    expect(jobQuotaBreach(unlimited, { queuedJobs: 1e9, jobBytes: 1e15 }, 1e7)).toBeUndefined();
  });
});

describe('defaultQuota', () => {
  it.each([
    [8, 4, 32],
    [4, 2, 16],
    [3, 1, 12],
    [1, 1, 4],
  ])('%i GPUs: minNum may hold %i (half, at least 1), maxNum reach %i', (gpus, minGpus, maxGpus) => {
    expect(defaultQuota(gpus)).toEqual({
      endpoints: 100,
      minGpus,
      maxGpus,
      workers: 100,
      credentials: 50,
      secrets: 100,
      invokeKeys: 200,
      queuedJobs: 10_000,
      jobBytes: 1024 ** 3,
    });
  });

  it('applies no GPU quota where the server has no GPUs', () => {
    expect(defaultQuota(0)).toMatchObject({ minGpus: UNLIMITED, maxGpus: UNLIMITED });
  });
});

describe('quotaFor', () => {
  const settings = {
    defaults: { endpoints: 10 },
    owners: { big: { minGpus: UNLIMITED, endpoints: 500 } },
  };

  it('takes the configured defaults over the inventory defaults', () => {
    const owner = quotaFor('someone', 8, settings);
    expect(owner.quota).toEqual({ ...defaultQuota(8), endpoints: 10 });
    expect(owner.sources).toMatchObject({ endpoints: 'config', minGpus: 'default', secrets: 'default' });
    expect(owner.source).toBe('config');
  });

  it("takes an owner's own values over both", () => {
    const owner = quotaFor('big', 8, settings);
    expect(owner.quota).toEqual({ ...defaultQuota(8), endpoints: 500, minGpus: UNLIMITED });
    expect(owner.source).toBe('config');
    expect(owner.reason).toContain('quotas.owners');
  });

  it('gives an owner named like an object property the defaults', () => {
    expect(quotaFor('constructor', 8, settings).quota).toEqual({ ...defaultQuota(8), endpoints: 10 });
  });

  it('says the defaults apply where nothing is configured', () => {
    const owner = quotaFor('someone', 2, { defaults: {}, owners: {} });
    expect(owner.quota).toEqual(defaultQuota(2));
    expect(owner).toMatchObject({ source: 'default', reason: 'the defaults for a server with 2 GPU(s)' });
    expect(new Set(Object.values(owner.sources))).toEqual(new Set(['default']));
  });

  it('holds the operator to no default GPU quota, configured for everyone or not, and to every other default', () => {
    for (const defaults of [{}, { minGpus: 1, maxGpus: 2, endpoints: 10 }]) {
      const owner = quotaFor('default', 2, { defaults, owners: {} }, true);
      expect(owner.quota).toMatchObject({
        minGpus: UNLIMITED,
        maxGpus: UNLIMITED,
        workers: 100,
        secrets: 100,
      });
      expect(owner.sources).toMatchObject({ minGpus: 'operator', maxGpus: 'operator', workers: 'default' });
      expect(owner.source).toBe('operator');
      expect(owner.reason).toContain('admin key');
    }
  });

  it('holds the operator to a GPU quota the config sets for it by owner id', () => {
    const owner = quotaFor('default', 8, { defaults: {}, owners: { default: { minGpus: 3 } } }, true);
    expect(owner.quota).toMatchObject({ minGpus: 3, maxGpus: UNLIMITED });
    expect(owner.sources).toMatchObject({ minGpus: 'config', maxGpus: 'operator' });
    expect(owner.source).toBe('config');
  });
});
