/** validateSpec's volume rules: each mount path conflict named at its volume, and network storages not shared. */
import { describe, expect, it } from 'vitest';
import type { VolumeMount as Volume } from './endpoint.js';
import { DEFAULT_LIMITS, type Limits } from './limits.js';
import { createSpec } from './spec-patch.js';
import { type ValidationCatalog, validateSpec } from './validate.js';

const limits: Limits = { ...structuredClone(DEFAULT_LIMITS), cudaVersions: ['12.4'] };

function issues(volumes: Volume[], catalog: Partial<ValidationCatalog> = {}, clusterId = 'c1') {
  const spec = createSpec('ep', limits, { image: { ref: 'x/y:1' }, port: 8000, volumes, clusterId });
  return validateSpec(spec, limits, {
    productIds: new Set(),
    networkStorages: new Map([
      ['models', 'c1'],
      ['team-a', 'c1'],
    ]),
    credentialIds: new Set(),
    ...catalog,
  });
}

const local = (mountPath: string): Volume => ({ type: 'local', sizeGB: 1, mountPath });
const network = (storageId: string, mountPath: string): Volume => ({ type: 'network', storageId, mountPath });

describe('mount paths', () => {
  it('names the volume whose mountPath conflicts, for each conflict', () => {
    expect(issues([local('/x'), network('models', '/x/'), local('/proc')])).toEqual([
      expect.objectContaining({ field: 'volumes.1.mountPath', reason: 'INVALID_FIELD' }),
      expect.objectContaining({ field: 'volumes.2.mountPath', reason: 'INVALID_FIELD' }),
    ]);
  });
});

describe('network storages', () => {
  it.each<[string, ValidationCatalog['forbiddenStorages'], string[]]>([
    ['shared with everyone', undefined, []],
    ['shared with this owner', new Set(['team-a']), []],
    ['not shared with this owner', new Set(['models']), ['STORAGE_NOT_ALLOWED']],
  ])('%s: %j', (_what, forbiddenStorages, reasons) => {
    const found = issues([network('models', '/models')], forbiddenStorages ? { forbiddenStorages } : {});
    expect(found.map((i) => i.reason)).toEqual(reasons);
  });

  it('a storage not shared with the owner names it in the field path and the details', () => {
    const [issue] = issues([local('/scratch'), network('team-a', '/team')], {
      forbiddenStorages: new Set(['team-a']),
    });
    expect(issue).toMatchObject({
      field: 'volumes.1.storageId',
      reason: 'STORAGE_NOT_ALLOWED',
      details: { storage: 'team-a' },
    });
    expect(issue?.message).toContain('"team-a"');
  });

  it('an unknown storage stays UNKNOWN_STORAGE, and a forbidden one says nothing of its cluster', () => {
    expect(issues([network('nope', '/n')]).map((i) => i.reason)).toEqual(['UNKNOWN_STORAGE']);
    const found = issues([network('models', '/m')], { forbiddenStorages: new Set(['models']) }, 'other');
    expect(found.map((i) => i.reason)).toEqual(['STORAGE_NOT_ALLOWED']);
  });
});
