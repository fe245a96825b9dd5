import { afterEach, describe, expect, it } from 'vitest';
import { makeHarness, runCommand } from '../../test/support/cli-harness.js';
import type { WireLimits } from '../client/index.js';
import { makeLimitsCommand } from './limits.js';
import { makeProductsCommand } from './products.js';

afterEach(() => {
  process.exitCode = undefined;
});

const quotaReport = {
  quota: { endpoints: 100, minGpus: 'unlimited' },
  used: { endpoints: 2, minGpus: 1 },
  source: 'operator',
  reason: 'this owner holds an admin key: the default GPU quotas do not apply to the operator',
  sources: { endpoints: 'default', minGpus: 'operator' },
};

const limits: WireLimits = {
  minRootfsSize: 100,
  maxRootfsSize: 100,
  freeRootfsSize: 100,
  minLocalVolumeSize: 1,
  maxLocalVolumeSize: 500,
  freeLocalVolumeSize: 20,
  minWorkerNum: 0,
  maxWorkerNum: 10,
  minFreeTimeout: 5,
  maxFreeTimeout: 3600,
  minConcurrencyNum: 1,
  maxConcurrencyNum: 100,
  minQueueWaitTime: 1,
  maxQueueWaitTime: 300,
  minRequestNum: 1,
  maxRequestNum: 1000,
  minGPUNum: 1,
  maxGPUNum: 8,
  minRequestTimeout: 1,
  maxRequestTimeout: 3600,
  cudaVersionList: ['11.8', '12.4'],
};

describe('corral limits', () => {
  it('prints a table of ranges and the CUDA versions, then the quotas', async () => {
    const h = makeHarness({
      routes: { 'GET endpoint/limit': { body: limits }, 'GET quota': { body: quotaReport } },
    });
    await runCommand(makeLimitsCommand(h.deps), []);
    expect(h.err()).toBe('');
    expect(h.out()).toBe(
      [
        'PARAMETER                      MIN   MAX  FREE  UNIT',
        'rootfsSize                     100   100   100  GB',
        'local volume size                1   500    20  GB',
        'workers (minNum/maxNum)          0    10     -',
        'freeTimeout                      5  3600     -  s',
        'maxConcurrent                    1   100     -',
        'queue wait (policy queue)        1   300     -  s',
        'requests (policy concurrency)    1  1000     -',
        'gpuNum                           1     8     -',
        'requestTimeout                   1  3600     -  s',
        '',
        'CUDA versions: 11.8, 12.4',
        '',
        'QUOTA      USED      LIMIT  FROM',
        'endpoints     2        100  default',
        'minGpus       1  unlimited  operator',
        '',
        'Quotas: operator (this owner holds an admin key: the default GPU quotas do not apply to the operator)',
        '',
      ].join('\n'),
    );
  });

  it('prints the raw record with --json', async () => {
    const h = makeHarness({ routes: { 'GET endpoint/limit': { body: limits } } });
    await runCommand(makeLimitsCommand(h.deps), ['--json']);
    expect(JSON.parse(h.out())).toEqual(limits);
  });

  it('reports a 401', async () => {
    const h = makeHarness({
      routes: {
        'GET endpoint/limit': {
          status: 401,
          body: { code: 401, reason: 'UNAUTHORIZED', message: 'invalid API key', metadata: {} },
        },
      },
      env: { CORRAL_API_KEY: 'sk_wrong_key' },
    });
    await runCommand(makeLimitsCommand(h.deps), []);
    expect(h.err()).toBe('error: UNAUTHORIZED: invalid API key\n');
    expect(h.err()).not.toContain('sk_wrong_key');
    expect(process.exitCode).toBe(1);
  });
});

describe('corral products', () => {
  const products = [
    {
      id: 'h100-80g',
      name: 'NVIDIA H100 80GB',
      gpuModel: 'H100',
      gpuMemoryGB: 80,
      gpusTotal: 8,
      gpusFree: 3,
    },
    { id: 'l4-24g', name: 'NVIDIA L4', gpuModel: 'L4', gpuMemoryGB: 24, gpusTotal: 16, gpusFree: 16 },
  ];

  it('prints a table', async () => {
    const h = makeHarness({ routes: { 'GET products': { body: { products } } } });
    await runCommand(makeProductsCommand(h.deps), []);
    expect(h.out()).toBe(
      [
        'ID        NAME              GPU   MEMORY   FREE',
        'h100-80g  NVIDIA H100 80GB  H100   80 GB    3/8',
        'l4-24g    NVIDIA L4         L4     24 GB  16/16',
        '',
      ].join('\n'),
    );
  });

  it('prints {products} with --json and a note when empty', async () => {
    const h = makeHarness({ routes: { 'GET products': { body: { products } } } });
    await runCommand(makeProductsCommand(h.deps), ['--json']);
    expect(JSON.parse(h.out())).toEqual({ products });
    const empty = makeHarness({ routes: { 'GET products': { body: { products: [] } } } });
    await runCommand(makeProductsCommand(empty.deps), []);
    expect(empty.out()).toBe('No GPU products.\n');
  });
});
