import { describe, expect, it } from 'vitest';
import type { WireLimits } from '../../src/client/index.js';
import { controlFor, defaultForm, formErrors, inputOf, parseEnvs, parseVolumes } from './spec-form.js';

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
    expect(form).toMatchObject({ policyType: 'queue', policyValue: '4', healthPath: '/health' });
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
