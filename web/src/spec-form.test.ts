import { describe, expect, it } from 'vitest';
import type { WireEndpoint, WireLimits } from '../../src/client/index.js';
import {
  controlFor,
  defaultForm,
  formErrors,
  formOf,
  inputOf,
  parseEnvs,
  parseVolumes,
} from './spec-form.js';

const LIMITS: WireLimits = {
  minRootfsSize: 100,
  maxRootfsSize: 100,
  freeRootfsSize: 100,
  minLocalVolumeSize: 0,
  maxLocalVolumeSize: 100,
  freeLocalVolumeSize: 30,
  minWorkerNum: 0,
  maxWorkerNum: 20,
  minFreeTimeout: 120,
  maxFreeTimeout: 3600,
  minConcurrencyNum: 1,
  maxConcurrencyNum: 256,
  minQueueWaitTime: 1,
  maxQueueWaitTime: 300,
  minRequestNum: 1,
  maxRequestNum: 1000,
  minGPUNum: 1,
  maxGPUNum: 8,
  minRequestTimeout: 1,
  maxRequestTimeout: 60,
  cudaVersionList: ['12.4'],
};

describe('the create/edit form', () => {
  it('starts from the documented defaults, moved into the server ranges', () => {
    const form = defaultForm(LIMITS);
    expect(form).toMatchObject({ minNum: '0', maxNum: '1', freeTimeout: '120', requestTimeout: '60' });
    expect(form).toMatchObject({ policyType: 'queue', policyValue: '4', type: 'http' });
    expect(form).toMatchObject({ keepFrozen: '0', keepSuspended: '0', healthPath: '' });
  });

  it('builds a queue endpoint with idle tiers, leaving its health path to the API', () => {
    const form = {
      ...defaultForm(LIMITS),
      image: 'runpod/handler:1',
      type: 'queue',
      keepFrozen: '600',
      keepSuspended: ' 3600 ',
    };
    const input = inputOf(form);
    expect(input.type).toBe('queue');
    expect(input.workerConfig).toMatchObject({ keepFrozen: '600', keepSuspended: '3600' });
    // A queue endpoint has no health path unless one is named: the form names none it was not given.
    expect(input.healthy).not.toHaveProperty('path');
    expect(inputOf({ ...form, healthPath: ' /ready ' }).healthy).toMatchObject({ path: '/ready' });
  });

  it("sends an endpoint's health path only when the edit changed it", () => {
    const endpoint = {
      name: 'q',
      appName: 'q',
      type: 'queue',
      image: { image: 'runpod/handler:1', command: '', authId: '' },
      ports: [{ port: 8000 }],
      workerConfig: {
        minNum: 0,
        maxNum: 1,
        gpuNum: 1,
        maxConcurrent: '1',
        freeTimeout: '60',
        requestTimeout: 300,
        keepFrozen: 600,
        keepSuspended: 0,
        cudaVersion: 'any',
      },
      policy: { type: 'queue', value: '4' },
      rootfsSize: 100,
      healthy: { path: '', initialDelay: 0, period: 2, timeout: 2, successThreshold: 1, failureThreshold: 3 },
      envs: [],
      volumeMounts: [],
      products: [],
      public: false,
    } as unknown as WireEndpoint;
    const loaded = formOf(endpoint);
    expect(loaded).toMatchObject({ type: 'queue', keepFrozen: '600', keepSuspended: '0', healthPath: '' });
    expect(inputOf({ ...loaded, type: 'http' }, loaded).healthy).not.toHaveProperty('path');
    const named = { ...formOf({ ...endpoint, healthy: { ...endpoint.healthy, path: '/ready' } }) };
    expect(inputOf({ ...named, healthPath: '' }, named).healthy).toMatchObject({ path: '' });
  });

  it('builds the request as the API reads it, with empty numbers left out', () => {
    const form = {
      ...defaultForm(LIMITS),
      image: ' nginx:1 ',
      port: '80',
      gpuNum: '',
      envs: 'A=1\nB=x=y\n\nFLAG',
      volumes: 'local 30 /data\nnetwork shared /mnt/s',
      products: ['h100-80g'],
    };
    const input = inputOf(form);
    expect(input.image).toEqual({ image: 'nginx:1', command: '', authId: '' });
    expect(input.ports).toEqual([{ port: '80' }]);
    expect(input.workerConfig).not.toHaveProperty('gpuNum');
    expect(input.envs).toEqual([
      { key: 'A', value: '1' },
      { key: 'B', value: 'x=y' },
      { key: 'FLAG', value: '' },
    ]);
    expect(input.volumeMounts).toEqual([
      { type: 'local', size: '30', mountPath: '/data' },
      { type: 'network', id: 'shared', mountPath: '/mnt/s' },
    ]);
    expect(input.products).toEqual([{ id: 'h100-80g' }]);
    expect(input).not.toHaveProperty('appName');
  });

  it('parses env and volume lines', () => {
    expect(parseEnvs('  K = v \n')).toEqual([{ key: 'K', value: ' v' }]);
    expect(parseVolumes('local 10 /a b')).toEqual([{ type: 'local', size: '10', mountPath: '/a b' }]);
  });

  it('maps the fields the API names to the controls that edit them', () => {
    expect(controlFor('workerConfig.maxNum')).toBe('maxNum');
    expect(controlFor('workerConfig.keepFrozen')).toBe('keepFrozen');
    expect(controlFor('workerConfig.keepSuspended')).toBe('keepSuspended');
    expect(controlFor('type')).toBe('type');
    expect(controlFor('ports.0.port')).toBe('port');
    expect(controlFor('envs.3.key')).toBe('envs');
    expect(controlFor('volumeMounts.0.mountPath')).toBe('volumes');
    expect(controlFor('somethingElse')).toBeUndefined();
  });

  it('places every issue of an error at its control, the rest at the form', () => {
    const errors = formErrors('maxNum must be at most 20', {
      field: 'workerConfig.maxNum',
      issues: [
        { field: 'workerConfig.maxNum', message: 'maxNum must be at most 20' },
        { field: 'envs.1.key', message: 'bad key' },
        { field: 'envs.2.key', message: 'twice' },
        { field: 'mystery', message: 'odd' },
      ],
    });
    expect(errors.byControl).toEqual({ maxNum: 'maxNum must be at most 20', envs: 'bad key; twice' });
    expect(errors.general).toEqual(['odd']);
    expect(formErrors('quota', { quota: 'minGpus' })).toEqual({ byControl: {}, general: ['quota'] });
    expect(formErrors('taken', { field: 'appName' }).byControl).toEqual({ appName: 'taken' });
  });
});
