/** The models of an endpoint as each runtime gives them to a worker: built by worker-spec.ts, then each runtime's spec. */
import { describe, expect, it } from 'vitest';
import { sampleEndpoint } from '../../../test/support/fixtures.js';
import { containerSpec } from '../../runtime/docker/container-spec.js';
import { modelNodeLabel, podSpec } from '../../runtime/kubernetes/pod-spec.js';
import { localWorkerEnv } from '../../runtime/local/worker-env.js';
import type { ManagedWorker } from './managed-worker.js';
import { buildWorkerSpec } from './worker-spec.js';

const worker = { id: 'w1', revision: 1 } as ManagedWorker;
const models = [
  { name: 'acme/tiny', revision: 'main', allowPatterns: [], tokenSecret: null },
  { name: 'other/big-one', revision: 'refs/pr/1', allowPatterns: ['*.json'], tokenSecret: 'hf' },
];

function workerSpec(env: { key: string; value: string }[] = []) {
  const endpoint = sampleEndpoint({ patch: { models, env } });
  return buildWorkerSpec(endpoint, worker, [], { storagePaths: new Map(), modelHubDir: '/var/corral/hub' });
}

describe("an endpoint's models in its workers", () => {
  it("mounts each named model's repository directory, not the whole cache, where the hub's clients look", () => {
    const spec = workerSpec();
    expect(spec.volumes).toEqual([
      {
        type: 'model',
        name: 'acme/tiny',
        hostPath: '/var/corral/hub/models--acme--tiny',
        repoDir: 'models--acme--tiny',
        mountPath: '/runpod-volume/huggingface-cache/hub/models--acme--tiny',
      },
      {
        type: 'model',
        name: 'other/big-one',
        hostPath: '/var/corral/hub/models--other--big-one',
        repoDir: 'models--other--big-one',
        mountPath: '/runpod-volume/huggingface-cache/hub/models--other--big-one',
      },
    ]);
    expect(spec.env).toMatchObject({
      HF_HUB_CACHE: '/runpod-volume/huggingface-cache/hub',
      HF_HUB_OFFLINE: '1',
    });
  });

  it("lets the endpoint's own env win over the models' variables", () => {
    expect(workerSpec([{ key: 'HF_HUB_OFFLINE', value: '0' }]).env.HF_HUB_OFFLINE).toBe('0');
  });

  it('sets nothing for an endpoint without models', () => {
    const spec = buildWorkerSpec(sampleEndpoint(), worker, [], {
      storagePaths: new Map(),
      modelHubDir: '/h',
    });
    expect(spec.volumes).toEqual([]);
    expect(spec.env.HF_HUB_CACHE).toBeUndefined();
  });

  it('binds them read-only on Docker', () => {
    const mounts = containerSpec(workerSpec(), { hostIp: '127.0.0.1', namePrefix: 'corral-' }).HostConfig
      .Mounts;
    expect(mounts).toEqual([
      {
        Type: 'bind',
        Source: '/var/corral/hub/models--acme--tiny',
        Target: '/runpod-volume/huggingface-cache/hub/models--acme--tiny',
        ReadOnly: true,
      },
      {
        Type: 'bind',
        Source: '/var/corral/hub/models--other--big-one',
        Target: '/runpod-volume/huggingface-cache/hub/models--other--big-one',
        ReadOnly: true,
      },
    ]);
  });

  it("mounts the node's cache read-only on Kubernetes and, without node agents, prefers nodes labelled as holding the models", () => {
    const pod = podSpec(
      workerSpec(),
      { product: 'h100-80g', gpuNum: 1 },
      {
        namespace: 'corral',
        namePrefix: 'corral-',
        installationLabels: {},
        terminationGraceSeconds: 30,
        networkClaims: {},
        nodeModelCacheDir: '/mnt/corral-cache/hub/',
      },
    );
    expect(pod.spec.volumes?.[0]).toEqual({
      name: 'volume-0',
      hostPath: { path: '/mnt/corral-cache/hub/models--acme--tiny', type: 'Directory' },
    });
    expect(pod.spec.containers[0]?.volumeMounts?.[0]).toEqual({
      name: 'volume-0',
      mountPath: '/runpod-volume/huggingface-cache/hub/models--acme--tiny',
      readOnly: true,
    });
    const terms = pod.spec.affinity?.nodeAffinity?.preferredDuringSchedulingIgnoredDuringExecution ?? [];
    expect(terms.map((t) => t.preference.matchExpressions)).toEqual([
      [{ key: 'models.corral.dev/models--acme--tiny', operator: 'Exists' }],
      [{ key: 'models.corral.dev/models--other--big-one', operator: 'Exists' }],
    ]);
    // Without node agents nothing fills or labels the nodes: a preference, never a requirement.
    expect(JSON.stringify(pod.spec)).not.toContain('requiredDuringScheduling');
  });

  it('requires nodes labelled as holding every model where the node agents fill the caches', () => {
    const pod = podSpec(
      workerSpec(),
      { product: 'h100-80g', gpuNum: 1 },
      {
        namespace: 'corral',
        namePrefix: 'corral-',
        installationLabels: {},
        terminationGraceSeconds: 30,
        networkClaims: {},
        nodeModelCacheDir: '/var/lib/corral/models/hub',
        modelNodesRequired: true,
      },
    );
    // One term with both requirements: a node must hold both models (terms are alternatives, requirements are not).
    expect(pod.spec.affinity?.nodeAffinity).toEqual({
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: [
          {
            matchExpressions: [
              { key: 'models.corral.dev/models--acme--tiny', operator: 'Exists' },
              { key: 'models.corral.dev/models--other--big-one', operator: 'Exists' },
            ],
          },
        ],
      },
    });
    expect(pod.spec.volumes?.[1]).toEqual({
      name: 'volume-1',
      hostPath: { path: '/var/lib/corral/models/hub/models--other--big-one', type: 'Directory' },
    });
  });

  it('folds a long repository name into a label key Kubernetes takes', () => {
    const label = modelNodeLabel(`models--${'a'.repeat(60)}--${'b'.repeat(60)}`);
    const name = label.split('/')[1] ?? '';
    expect(name.length).toBeLessThanOrEqual(63);
    expect(name).toMatch(/^[A-Za-z0-9]([A-Za-z0-9_.-]*[A-Za-z0-9])?$/);
  });

  it("points HF_HUB_CACHE at the cache's own directory on the local runtime, unless the endpoint set it", () => {
    expect(localWorkerEnv(workerSpec(), {}, 9000, []).HF_HUB_CACHE).toBe('/var/corral/hub');
    const own = workerSpec([{ key: 'HF_HUB_CACHE', value: '/data/hf' }]);
    expect(localWorkerEnv(own, {}, 9000, []).HF_HUB_CACHE).toBe('/data/hf');
  });
});
