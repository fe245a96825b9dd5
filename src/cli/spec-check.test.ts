import { afterEach, describe, expect, it } from 'vitest';
import { makeHarness, runCommand } from '../../test/support/cli-harness.js';
import { toWireLimits } from '../contract/limits.js';
import { DEFAULT_LIMITS } from '../domain/limits.js';
import { makeApplyCommand } from './apply.js';
import { makeEndpointsCommand } from './endpoints.js';
import { checkSpec, didYouMean, unknownKeys } from './spec-check.js';

/** The requests that would change something: a spec with problems asks none. */
const writes = (requests: readonly { method: string }[]) => requests.filter((r) => r.method !== 'GET');

afterEach(() => {
  process.exitCode = undefined;
});

describe('unknownKeys', () => {
  it('names every unknown key at any depth, with a did-you-mean where one is close', () => {
    expect(
      unknownKeys({
        name: 'x',
        imag: { image: 'a:1' },
        workerConfig: { maxnum: 2, minNum: 0 },
        envs: [{ key: 'A', vale: '1' }],
        healthy: [{ path: '/', nonsense: 1 }],
      }),
    ).toEqual([
      { field: 'imag', reason: 'UNKNOWN_FIELD', message: 'unknown key "imag": did you mean "image"?' },
      {
        field: 'workerConfig.maxnum',
        reason: 'UNKNOWN_FIELD',
        message: 'unknown key "workerConfig.maxnum": did you mean "maxNum"?',
      },
      {
        field: 'envs.0.vale',
        reason: 'UNKNOWN_FIELD',
        message: 'unknown key "envs.0.vale": did you mean "value"?',
      },
      { field: 'healthy.0.nonsense', reason: 'UNKNOWN_FIELD', message: 'unknown key "healthy.0.nonsense"' },
    ]);
  });

  it('accepts every key of a full spec', () => {
    expect(
      unknownKeys({
        name: 'x',
        appName: 'x',
        image: { image: 'a:1', authId: '', command: '' },
        ports: [{ port: 80 }],
        workerConfig: {
          minNum: 0,
          maxNum: 1,
          freeTimeout: 60,
          maxConcurrent: 1,
          gpuNum: 1,
          cudaVersion: 'any',
        },
        policy: { type: 'queue', value: 4 },
        products: [{ id: 'h100-80g' }],
        volumeMounts: [{ type: 'local', size: 10, mountPath: '/data' }],
        envs: [{ key: 'A', value: '1' }],
        healthy: {
          path: '/',
          initialDelay: 0,
          period: 2,
          timeout: 2,
          successThreshold: 1,
          failureThreshold: 3,
        },
        rootfsSize: 100,
        clusterID: '',
        public: false,
      }),
    ).toEqual([]);
  });
});

describe('didYouMean', () => {
  it('prefers the same letters in another case, then a close spelling, else nothing', () => {
    expect(didYouMean('MAXNUM', ['minNum', 'maxNum'])).toBe('maxNum');
    expect(didYouMean('gpunm', ['gpuNum', 'maxNum'])).toBe('gpuNum');
    expect(didYouMean('colour', ['image', 'ports'])).toBeUndefined();
  });
});

describe('checkSpec', () => {
  it('reports unknown keys and wrong shapes together', () => {
    expect(() => checkSpec('s.yaml', { imagee: 'x', ports: 'eighty' }, 'create')).toThrow(
      expect.objectContaining({
        issues: [
          expect.objectContaining({ field: 'imagee' }),
          expect.objectContaining({ field: 'ports' }),
          expect.objectContaining({ field: 'image.image', message: 'image.image is required' }),
        ],
      }),
    );
  });
});

describe('a spec file with problems', () => {
  const file =
    'workerConfig: {maxnum: 2, minNum: many}\nimage: {image: a:1}\nports: [{port: 80}]\nextra: 1\n';

  it('is refused before any change is asked, with every problem in a table', async () => {
    const h = makeHarness({ files: { 'spec.yaml': file } });
    await runCommand(makeEndpointsCommand(h.deps), ['create', '-f', 'spec.yaml']);
    expect(writes(h.requests)).toEqual([]);
    expect(process.exitCode).toBe(1);
    expect(h.err()).toBe(
      [
        'error: spec.yaml has 3 problems:',
        '  FIELD                REASON         PROBLEM',
        '  workerConfig.maxnum  UNKNOWN_FIELD  unknown key "workerConfig.maxnum": did you mean "maxNum"?',
        '  extra                UNKNOWN_FIELD  unknown key "extra"',
        '  workerConfig.minNum  INVALID_FIELD  workerConfig.minNum must be an integer (a number or a numeric string)',
        '',
      ].join('\n'),
    );
  });

  it('is refused with every problem under --json too, and so is an update file', async () => {
    const h = makeHarness({ files: { 'spec.yaml': file } });
    await runCommand(makeEndpointsCommand(h.deps), ['update', 'ep-1', '-f', 'spec.yaml', '--json']);
    expect(writes(h.requests)).toEqual([]);
    const printed = JSON.parse(h.out());
    expect(printed.error.reason).toBe('INVALID_SPEC');
    expect(printed.error.issues.map((i: { field: string }) => i.field)).toEqual([
      'workerConfig.maxnum',
      'extra',
      'workerConfig.minNum',
    ]);
  });

  it('names a key beside endpoint: that nothing would read', async () => {
    const h = makeHarness({
      files: { 's.yaml': 'endpoints: 1\nendpoint: {image: {image: a:1}, ports: [{port: 80}]}\n' },
    });
    await runCommand(makeEndpointsCommand(h.deps), ['create', '-f', 's.yaml']);
    expect(h.err()).toContain('unknown key "endpoints" beside "endpoint": did you mean "endpoint"?');
    expect(writes(h.requests)).toEqual([]);
  });

  it("names an unknown key and the values out of the server's ranges in the same run", async () => {
    const h = makeHarness({
      files: {
        's.yaml':
          'name: x\nimage: {image: a:1}\nports: [{port: 80}]\nworkerConfig: {maxNum: 99, gpuNum: 0}\nextra: 1\n',
      },
      routes: { 'GET endpoint/limit': { body: toWireLimits({ ...DEFAULT_LIMITS, cudaVersions: ['12.4'] }) } },
    });
    await runCommand(makeApplyCommand(h.deps), ['-f', 's.yaml', '--no-wait']);
    expect(writes(h.requests)).toEqual([]);
    expect(h.err()).toBe(
      [
        'error: s.yaml has 3 problems:',
        '  FIELD                REASON         PROBLEM',
        '  extra                UNKNOWN_FIELD  unknown key "extra"',
        '  workerConfig.maxNum  OUT_OF_RANGE   maxNum must be an integer from 0 to 20, got 99',
        '  workerConfig.gpuNum  OUT_OF_RANGE   gpuNum must be an integer from 1 to 8, got 0',
        '',
      ].join('\n'),
    );
  });

  it("prints all of the API's problems when it reports several", async () => {
    const issues = [
      { field: 'workerConfig.maxNum', reason: 'OUT_OF_RANGE', message: 'maxNum must be at most 10' },
      { field: 'rootfsSize', reason: 'OUT_OF_RANGE', message: 'rootfsSize must be at least 10' },
    ];
    const h = makeHarness({
      files: {
        's.yaml': 'image: {image: a:1}\nports: [{port: 80}]\nworkerConfig: {maxNum: 99}\nrootfsSize: 1\n',
      },
      routes: {
        'POST endpoint/create': {
          status: 400,
          body: {
            code: 400,
            reason: 'OUT_OF_RANGE',
            message: 'maxNum must be at most 10 (and 1 more)',
            metadata: { issues },
          },
        },
      },
    });
    await runCommand(makeEndpointsCommand(h.deps), ['create', '-f', 's.yaml']);
    expect(h.err()).toBe(
      [
        'error: OUT_OF_RANGE: 2 problems:',
        '  FIELD                REASON        PROBLEM',
        '  workerConfig.maxNum  OUT_OF_RANGE  maxNum must be at most 10',
        '  rootfsSize           OUT_OF_RANGE  rootfsSize must be at least 10',
        '',
      ].join('\n'),
    );
  });
});
