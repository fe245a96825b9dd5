import type { Endpoint } from '../../src/domain/endpoint.js';
import { DEFAULT_LIMITS, type Limits } from '../../src/domain/limits.js';
import { applyPatch, defaultSpec, type SpecPatch } from '../../src/domain/spec-patch.js';

export const TEST_LIMITS: Limits = { ...DEFAULT_LIMITS, cudaVersions: ['11.8', '12.1', '12.4'] };

let counter = 0;

/** A valid endpoint for tests; ids and appNames are unique within a run. */
export function sampleEndpoint(options: { ownerId?: string; at?: number; patch?: SpecPatch } = {}): Endpoint {
  counter += 1;
  const id = `ep${String(counter).padStart(6, '0')}${Math.random().toString(36).slice(2, 8)}`;
  const at = options.at ?? 1_700_000_000_000 + counter;
  const spec = applyPatch(defaultSpec(id, TEST_LIMITS), {
    image: { ref: 'corral/test-worker:latest' },
    port: 8000,
    ...options.patch,
  });
  return {
    id,
    ownerId: options.ownerId ?? 'owner-a',
    spec,
    revision: 1,
    desired: 'running',
    status: { state: 'deploying', error: '', message: '' },
    createdAt: at,
    updatedAt: at,
  };
}
