import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { affinityOf, parseAffinity } from './affinity.js';

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
