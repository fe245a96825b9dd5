import { describe, expect, it } from 'vitest';
import type { CachedModel, ModelProgress } from '../../ports/model-cache.js';
import type { Node } from './api.js';
import {
  byModelLabel,
  modelNodes,
  type NodeFetch,
  nodeFetchVerdict,
  summedProgress,
  type WrittenLabels,
  withWrittenLabels,
} from './node-models.js';

const MODEL = { name: 'acme/tiny', revision: 'main' };
const GB = 1_000_000_000;

function node(
  name: string,
  options: { gpus?: string; cordoned?: boolean; addresses?: Node['status'] } = {},
): Node {
  return {
    metadata: { name },
    spec: options.cordoned ? { unschedulable: true } : {},
    status: {
      allocatable: options.gpus === undefined ? {} : { 'nvidia.com/gpu': options.gpus },
      addresses: [
        { type: 'Hostname', address: name },
        { type: 'InternalIP', address: `10.0.0.${name.length}` },
      ],
      ...options.addresses,
    },
  };
}

const cached = (bytes: number): CachedModel => ({
  ...MODEL,
  commit: 'c'.repeat(40),
  files: 3,
  bytes,
  repoDir: '/var/lib/corral/models/hub/models--acme--tiny',
  lastUsedAt: 0,
  diskBytes: bytes,
});

const progress = (bytesDone: number, bytesTotal: number, bytesPerSecond: number): ModelProgress => ({
  ...MODEL,
  bytesDone,
  bytesTotal,
  bytesPerSecond,
});

describe('the nodes whose agents fill the model cache', () => {
  it('are the schedulable nodes with GPUs, at their InternalIP', () => {
    expect(
      modelNodes([
        node('gpu-1', { gpus: '8' }),
        node('cpu-only'),
        node('gpu-cordoned', { gpus: '8', cordoned: true }),
        node('gpu-empty', { gpus: '0' }),
      ]),
    ).toEqual([{ name: 'gpu-1', address: '10.0.0.5', labels: {} }]);
  });

  it('take the first address where a node has no InternalIP, and leave out a node with none', () => {
    const external = node('gpu-2', {
      gpus: '1',
      addresses: { addresses: [{ type: 'ExternalIP', address: '1.2.3.4' }] },
    });
    const bare = node('gpu-3', { gpus: '1', addresses: { addresses: [] } });
    expect(modelNodes([external, bare])).toEqual([{ name: 'gpu-2', address: '1.2.3.4', labels: {} }]);
  });

  it('count the configured GPU resource', () => {
    const amd = {
      ...node('amd-1'),
      status: { ...node('amd-1').status, allocatable: { 'amd.com/gpu': '2' } },
    };
    expect(modelNodes([amd])).toEqual([]);
    expect(modelNodes([amd], 'amd.com/gpu')).toEqual([{ name: 'amd-1', address: '10.0.0.5', labels: {} }]);
  });
});

describe('a node lacking a model', () => {
  it("is a GPU node without the model's label, as one that joined after the fetch is", () => {
    const label = 'models.corral.dev/models--acme--tiny';
    const held = {
      ...node('gpu-1', { gpus: '1' }),
      metadata: { name: 'gpu-1', labels: { [label]: 'true' } },
    };
    expect(byModelLabel(modelNodes([held]), label).lacking).toEqual([]);
    const both = byModelLabel(modelNodes([held, node('gpu-22', { gpus: '1' })]), label);
    expect(both.lacking.map((n) => n.name)).toEqual(['gpu-22']);
    expect(both.labelled.map((n) => n.name)).toEqual(['gpu-1']);
    expect(byModelLabel([], label)).toEqual({ labelled: [], lacking: [] });
  });
});

describe("a model's progress over the nodes", () => {
  it('sums every node fetching or done against the model on each, at the rates summed', () => {
    const fetches: NodeFetch[] = [
      { phase: 'fetching', progress: progress(2 * GB, 10 * GB, 400_000_000) },
      { phase: 'fetching', progress: progress(1 * GB, 10 * GB, 100_000_000) },
      { phase: 'ready', model: cached(10 * GB) },
    ];
    expect(summedProgress(MODEL, fetches)).toEqual(progress(13 * GB, 30 * GB, 500_000_000));
  });

  it('counts a node that has said nothing yet with the total another gave, and leaves out failed nodes', () => {
    const fetches: NodeFetch[] = [
      { phase: 'fetching', progress: progress(5 * GB, 10 * GB, 1) },
      { phase: 'fetching', progress: null },
      { phase: 'failed', message: 'no node agent answers' },
    ];
    expect(summedProgress(MODEL, fetches)).toEqual(progress(5 * GB, 20 * GB, 1));
  });

  it('is nothing while no node knows the total (resolving on the hub)', () => {
    expect(summedProgress(MODEL, [{ phase: 'fetching', progress: null }])).toBeNull();
  });
});

describe("a model's verdict once every node has ended", () => {
  it('is ready where one node holds it: that node labelled, the failed one unlabelled', () => {
    expect(
      nodeFetchVerdict([
        { node: 'gpu-1', fetch: { phase: 'ready', model: cached(GB) } },
        { node: 'gpu-2', fetch: { phase: 'failed', message: 'disk full' } },
      ]),
    ).toEqual({ kind: 'ready', model: cached(GB), label: ['gpu-1'], unlabel: ['gpu-2'] });
  });

  it("is the hub's refusal when any node was refused, even where another holds the files", () => {
    const refusal = { code: 'MODEL_GATED' as const, message: 'acme/tiny is gated' };
    expect(
      nodeFetchVerdict([
        { node: 'gpu-1', fetch: { phase: 'ready', model: cached(GB) } },
        { node: 'gpu-2', fetch: { phase: 'refused', refusal } },
      ]),
    ).toEqual({ kind: 'refused', refusal });
  });

  it('fails naming each node when none could fetch it', () => {
    const verdict = nodeFetchVerdict([
      { node: 'gpu-1', fetch: { phase: 'failed', message: 'no node agent answers' } },
      { node: 'gpu-2', fetch: { phase: 'failed', message: 'disk full' } },
    ]);
    expect(verdict).toEqual({
      kind: 'failed',
      message: 'no node could fetch it (gpu-1: no node agent answers; gpu-2: disk full)',
    });
  });
});

describe('the labels Corral wrote, before the node watch shows them', () => {
  const label = 'models.corral.dev/models--acme--tiny';
  const seen = (labels: Record<string, string>) => [{ name: 'gpu-1', address: '10.0.0.1', labels }];

  it('lays them over the watch until it shows them, then leaves the watch the word', () => {
    const written: WrittenLabels = new Map([['gpu-1', new Map([[label, 'true']])]]);
    // The watch has not seen the patch yet: the node holds the model all the same.
    expect(byModelLabel(withWrittenLabels(seen({}), written), label).lacking).toEqual([]);
    // The watch shows it: forgotten, so a removal by anyone else counts from then on.
    withWrittenLabels(seen({ [label]: 'true' }), written);
    expect(written.size).toBe(0);
    expect(byModelLabel(withWrittenLabels(seen({}), written), label).lacking).toHaveLength(1);
  });

  it('keeps a node just unlabelled from counting as holding the model', () => {
    const written: WrittenLabels = new Map([['gpu-1', new Map([[label, null]])]]);
    expect(byModelLabel(withWrittenLabels(seen({ [label]: 'true' }), written), label).labelled).toEqual([]);
    withWrittenLabels(seen({}), written);
    expect(written.size).toBe(0);
  });
});
