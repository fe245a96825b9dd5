import { describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS } from '../domain/limits.js';
import { createSpec } from '../domain/spec-patch.js';
import { validateSpec } from '../domain/validate.js';
import { wireField, wireMessage, wireName } from './fields.js';

describe('wireName', () => {
  it.each([
    ['name', 'name'],
    ['workers.minWorkers', 'minNum'],
    ['workers.idleTimeoutSeconds', 'freeTimeout'],
    ['workers.gpusPerWorker', 'gpuNum'],
    ['workers.cudaVersion', 'cudaVersion'],
    ['scaling.value', 'policy value'],
    ['image.ref', 'image'],
    ['rootfsSizeGB', 'rootfsSize'],
    ['clusterId', 'clusterID'],
    ['health.initialDelaySeconds', 'healthy.initialDelay'],
    ['health.failureThreshold', 'healthy.failureThreshold'],
  ])('names %s as %s in a message', (domain, wire) => {
    expect(wireName(domain)).toBe(wire);
  });
});

describe('wireMessage', () => {
  it('writes the backticked domain fields of a message as clients know them, and nothing else', () => {
    expect(wireMessage('`workers.minWorkers` (3) is greater than `workers.maxWorkers` (2)')).toBe(
      'minNum (3) is greater than maxNum (2)',
    );
    expect(wireMessage('network storage "s" is in cluster "c"; `clusterId` must equal it')).toBe(
      'network storage "s" is in cluster "c"; clusterID must equal it',
    );
    expect(wireMessage('environment variable clusterId is set twice')).toBe(
      'environment variable clusterId is set twice',
    );
  });

  it("leaves no domain name in any of validate.ts's messages", () => {
    const limits = { ...structuredClone(DEFAULT_LIMITS), cudaVersions: ['12.4'] };
    const spec = createSpec('ep', limits, { image: { ref: 'x/y:1' }, port: 8000 });
    const bad = {
      ...spec,
      clusterId: 'c'.repeat(300),
      rootfsSizeGB: 1e6,
      image: { ...spec.image, ref: ' ' },
      workers: { ...spec.workers, minWorkers: 5, maxWorkers: 2, gpusPerWorker: 99, cudaVersion: '1.0' },
      scaling: { type: 'queue' as const, value: 1e6 },
      health: { ...spec.health, initialDelaySeconds: -1 },
    };
    const catalog = {
      productIds: new Set<string>(),
      networkStorages: new Map(),
      credentialIds: new Set<string>(),
    };
    const issues = validateSpec(bad, limits, catalog);
    const messages = issues.map((issue) => wireMessage(issue.message));
    expect(
      messages.filter((m) => /`|workers\.|Seconds|clusterId|rootfsSizeGB|scaling|image\.ref/.test(m)),
    ).toEqual([]);
    expect(issues.map((issue) => wireField(issue.field))).toContain('workerConfig.minNum');
    expect(messages).toContain('minNum (5) is greater than maxNum (2)');
    expect(messages).toContain('healthy.initialDelay must be an integer from 0 to 3600');
    expect(
      messages.some((m) => m.startsWith('image must be an image reference ([registry/]repository')),
    ).toBe(true);
    expect(messages.some((m) => m.startsWith('clusterID is longer than'))).toBe(true);
    expect(messages.some((m) => m.startsWith('policy value (queue wait seconds) must be'))).toBe(true);
    expect(messages.some((m) => m.startsWith('rootfsSize must be an integer from'))).toBe(true);
    expect(messages.some((m) => m.startsWith('gpuNum must be an integer from'))).toBe(true);
    expect(messages.some((m) => m.startsWith('cudaVersion must be "any"'))).toBe(true);
  });
});
