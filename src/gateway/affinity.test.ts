import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { affinityOf, affinityWorkerGone, parseAffinity } from './affinity.js';

describe('worker affinity headers', () => {
  it("reads RunPod's forms: an id, strict <id>, strict-resume <id>", () => {
    expect(parseAffinity('w-1')).toEqual({ mode: 'soft', workerId: 'w-1' });
    expect(parseAffinity(' strict  w-1 ')).toEqual({ mode: 'strict', workerId: 'w-1' });
    expect(parseAffinity('Strict-Resume w-1')).toEqual({ mode: 'strict-resume', workerId: 'w-1' });
  });

  it('ignores an empty or malformed value', () => {
    expect(parseAffinity(undefined)).toBeUndefined();
    expect(parseAffinity('  ')).toBeUndefined();
    expect(parseAffinity('sticky w-1')).toBeUndefined();
    expect(parseAffinity('strict w-1 w-2')).toBeUndefined();
  });

  it("takes Corral's header before RunPod's", () => {
    const req = (headers: Record<string, string>) => ({ headers }) as unknown as IncomingMessage;
    expect(affinityOf(req({ 'x-runpod-worker-id': 'r', 'x-corral-worker-id': 'c' }))?.workerId).toBe('c');
    expect(affinityOf(req({ 'x-runpod-worker-id': 'strict r' }))).toEqual({ mode: 'strict', workerId: 'r' });
    expect(affinityOf(req({}))).toBeUndefined();
  });
});

describe('a strict request whose worker is not routable', () => {
  const strict = { mode: 'strict' as const, workerId: 'w-1' };
  it.each([
    ['no record of it', undefined, true],
    ["another endpoint's worker", { endpointId: 'e-2', state: 'running' as const }, true],
    ['failed', { endpointId: 'e-1', state: 'failed' as const }, true],
    ['draining (being removed)', { endpointId: 'e-1', state: 'draining' as const }, true],
    ['stopped', { endpointId: 'e-1', state: 'stopped' as const }, true],
    ['frozen', { endpointId: 'e-1', state: 'frozen' as const }, false],
    ['suspended', { endpointId: 'e-1', state: 'suspended' as const }, false],
    ['starting', { endpointId: 'e-1', state: 'starting' as const }, false],
    ['unhealthy', { endpointId: 'e-1', state: 'unhealthy' as const }, false],
  ])('%s: gone is %s', (_name, worker, gone) => {
    const error = affinityWorkerGone(strict, 'e-1', worker);
    expect(error !== undefined).toBe(gone);
    if (error) {
      expect(error).toMatchObject({
        code: 'AFFINITY_WORKER_GONE',
        status: 404,
        metadata: { workerId: 'w-1' },
      });
      expect(error.message).toMatch(/^affinity_worker_gone: worker w-1 of endpoint e-1/);
    }
  });
});
