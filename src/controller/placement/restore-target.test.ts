import { describe, expect, it } from 'vitest';
import { type RestoreTargetInput, restoreTarget } from './restore-target.js';

const gpu = (uuid: string, productId = 'h100-80g', memoryGB = 80) => ({ uuid, productId, memoryGB });
const GPUS = [gpu('G0'), gpu('G1'), gpu('G2'), gpu('A0', 'a100-40g', 40)];

function input(overrides: Partial<RestoreTargetInput> = {}): RestoreTargetInput {
  return {
    workerId: 'w',
    endpointId: 'e',
    own: ['G0'],
    gpuBytes: { G0: 40e9 },
    gpus: GPUS,
    held: new Map(),
    resting: new Map(),
    remaps: false,
    ...overrides,
  };
}

describe('restoreTarget', () => {
  it('restores onto its own GPUs where no other worker holds them', () => {
    expect(restoreTarget(input())).toEqual({ type: 'own' });
    expect(restoreTarget(input({ held: new Map([['G0', 'w']]) }))).toEqual({ type: 'own' });
  });

  it('without a runtime that remaps, waits for its own GPU even with another of its product free', () => {
    expect(restoreTarget(input({ held: new Map([['G0', 'running-one']]) }))).toEqual({
      type: 'wait',
      busy: ['G0'],
      evict: [],
    });
  });

  it('where the runtime remaps: onto a free GPU of its product with room for its recorded memory, its own where free', () => {
    const held = new Map([
      ['G0', 'x'],
      ['G1', 'y'],
    ]);
    expect(restoreTarget(input({ remaps: true, held }))).toEqual({
      type: 'remap',
      pairs: [{ from: 'G0', to: 'G2' }],
    });
    // Two GPUs, one of them free: it keeps that one and moves the other.
    expect(restoreTarget(input({ remaps: true, own: ['G0', 'G1'], held: new Map([['G1', 'x']]) }))).toEqual({
      type: 'remap',
      pairs: [{ from: 'G1', to: 'G2' }],
    });
    // Never onto another product, nor onto one too small for what it held.
    const busyH100 = new Map(['G0', 'G1', 'G2'].map((uuid) => [uuid, 'x']));
    expect(restoreTarget(input({ remaps: true, held: busyH100 }))).toMatchObject({ type: 'wait' });
    const small = [gpu('G0'), gpu('S1', 'h100-80g', 20)];
    expect(restoreTarget(input({ remaps: true, gpus: small, held: new Map([['G0', 'x']]) }))).toMatchObject({
      type: 'wait',
    });
  });

  it('waiting, it moves down the frozen workers of other endpoints that hold its GPUs, oldest idle first, as a pending worker would', () => {
    const held = new Map([
      ['G0', 'f-new'],
      ['G1', 'f-old'],
    ]);
    const resting = new Map([
      ['f-new', { endpointId: 'b', tierSince: 2_000 }],
      ['f-old', { endpointId: 'c', tierSince: 1_000 }],
    ]);
    expect(restoreTarget(input({ own: ['G0', 'G1'], held, resting }))).toEqual({
      type: 'wait',
      busy: ['G0', 'G1'],
      evict: ['f-old', 'f-new'],
    });
  });

  it('moves none down when one of its GPUs is held by a running worker, or by a frozen one of its own endpoint', () => {
    const resting = new Map([['f', { endpointId: 'b', tierSince: 1 }]]);
    const running = new Map([
      ['G0', 'f'],
      ['G1', 'busy'],
    ]);
    expect(restoreTarget(input({ own: ['G0', 'G1'], held: running, resting }))).toMatchObject({ evict: [] });
    const sameEndpoint = new Map([['f', { endpointId: 'e', tierSince: 1 }]]);
    expect(restoreTarget(input({ held: new Map([['G0', 'f']]), resting: sameEndpoint }))).toMatchObject({
      evict: [],
    });
  });
});
