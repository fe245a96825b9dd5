import { describe, expect, it } from 'vitest';
import { sampleEndpoint } from '../../../test/support/fixtures.js';
import type { EndpointSpec } from '../../domain/endpoint.js';
import type { ManagedWorker } from '../workers/managed-worker.js';
import { answered } from './probe-result.js';
import { probeTargetOf } from './probe-target.js';

const worker = { id: 'w1', state: 'starting', address: { host: '127.0.0.1', port: 41000 }, readyAt: null };
const queueProbe = async () => answered(200);

function targetOf(patch: Partial<Pick<EndpointSpec, 'type'>> & { path?: string }) {
  const endpoint = sampleEndpoint({
    patch: { type: patch.type, ...(patch.path === undefined ? {} : { health: { path: patch.path } }) },
  });
  return probeTargetOf({
    record: worker as unknown as ManagedWorker,
    endpoint,
    runtimeName: 'local',
    queueProbe,
  });
}

describe("a started worker's probe target", () => {
  it('is the HTTP probe alone on an http endpoint', () => {
    const target = targetOf({ type: 'http' });
    expect(target?.check.path).toBe('/health');
    expect(target?.probe).toBeUndefined();
    expect(target?.alsoHttp).toBeUndefined();
  });

  it("is the worker's polls alone on a queue endpoint without healthy.path", () => {
    const target = targetOf({ type: 'queue' });
    expect(target?.check.path).toBe('');
    expect(target?.probe).toBeTypeOf('function');
    expect(target?.alsoHttp).toBeUndefined();
  });

  it('is the polls and the HTTP probe of the path on a queue endpoint with healthy.path', () => {
    const target = targetOf({ type: 'queue', path: '/ready' });
    expect(target?.check.path).toBe('/ready');
    expect(target?.probe).toBeTypeOf('function');
    expect(target?.alsoHttp).toBe(true);
  });

  it('is nothing for a worker not started or without an address', () => {
    const endpoint = sampleEndpoint({ patch: { type: 'queue' } });
    for (const record of [
      { ...worker, state: 'pending' },
      { ...worker, address: null },
    ])
      expect(
        probeTargetOf({
          record: record as unknown as ManagedWorker,
          endpoint,
          runtimeName: 'local',
          queueProbe,
        }),
      ).toBeUndefined();
  });
});
