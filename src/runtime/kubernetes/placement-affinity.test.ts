import { describe, expect, it } from 'vitest';
import { LABELS, type WorkerSpec } from '../types.js';
import type { PodManifest, WeightedPodAffinityTerm } from './objects.js';
import { podSpec } from './pod-spec.js';

/** A label selector as the scheduler evaluates it against a pod's labels (the operators Corral uses). */
function selects(term: WeightedPodAffinityTerm, pod: PodManifest): boolean {
  const labels = pod.metadata.labels ?? {};
  const { matchLabels = {}, matchExpressions = [] } = term.podAffinityTerm.labelSelector;
  if (!Object.entries(matchLabels).every(([key, value]) => labels[key] === value)) return false;
  return matchExpressions.every(({ key, operator, values = [] }) => {
    const value = labels[key];
    if (operator === 'In') return value !== undefined && values.includes(value);
    if (operator === 'NotIn') return value === undefined || !values.includes(value);
    throw new Error(`operator ${operator} not expected`);
  });
}

function pod(endpointId: string, workerId: string): PodManifest {
  const spec: WorkerSpec = {
    workerId,
    endpointId,
    ownerId: 'o1',
    revision: 1,
    image: 'registry.example.com/llm/server:1.2',
    command: [],
    env: {},
    port: 8000,
    gpus: [],
    volumes: [],
    labels: {},
  };
  return podSpec(
    spec,
    { product: 'h100-80g', gpuNum: 1 },
    {
      namespace: 'corral-workers',
      namePrefix: 'corral-',
      installationLabels: { [LABELS.installation]: 'inst-1' },
      terminationGraceSeconds: 10,
      networkClaims: {},
    },
  );
}

function terms(manifest: PodManifest) {
  const affinity = manifest.spec.affinity;
  return {
    spread: affinity?.podAntiAffinity?.preferredDuringSchedulingIgnoredDuringExecution ?? [],
    pack: affinity?.podAffinity?.preferredDuringSchedulingIgnoredDuringExecution ?? [],
  };
}

const notCorral: PodManifest = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'web-1', namespace: 'corral-workers', labels: { app: 'web' }, annotations: {} },
  spec: { containers: [] },
};

describe('where a worker pod prefers to run', () => {
  // Endpoint ids as Corral makes them, and one a label value cannot hold as it is (folded on the pod).
  for (const [own, other] of [
    ['ab12cd34ef56gh78', 'zz99yy88xx77ww66'],
    ['an endpoint id/with a slash and much too long for a label value of sixty-three', 'other'],
  ] as const) {
    it(`avoids nodes with its own endpoint's workers and favours nodes with other endpoints' (${own.slice(0, 20)})`, () => {
      const worker = pod(own, 'w-new');
      const sameEndpoint = pod(own, 'w-old');
      const otherEndpoint = pod(other, 'w-other');
      const { spread, pack } = terms(worker);

      expect(spread.filter((term) => selects(term, sameEndpoint))).toHaveLength(1);
      expect(spread.filter((term) => selects(term, otherEndpoint))).toHaveLength(0);
      expect(pack.filter((term) => selects(term, otherEndpoint))).toHaveLength(1);
      expect(pack.filter((term) => selects(term, sameEndpoint))).toHaveLength(0);
      expect([...spread, ...pack].filter((term) => selects(term, notCorral))).toHaveLength(0);
    });
  }

  it('spreads before it packs: one worker of its own endpoint outweighs several of others', () => {
    const { spread, pack } = terms(pod('ab12cd34ef56gh78', 'w-new'));
    const [avoid] = spread;
    const [favour] = pack;
    expect(avoid?.weight).toBeGreaterThanOrEqual(5 * (favour?.weight ?? Number.POSITIVE_INFINITY));
    for (const term of [...spread, ...pack])
      expect(term.podAffinityTerm.topologyKey).toBe('kubernetes.io/hostname');
  });
});
