/**
 * The node/GPU catalogue on the API stand-in, alone (its pods are plain data here, as the pod adapter would hand them):
 * products follow the node watch with one list and one watch, Corral's pods count against their nodes once told they
 * changed, discovered GPU models get a product and a node label (configured labels win), nodes that cannot be listed
 * are logged and leave the products empty, and after close nothing is listed nor logged.
 */
import { KubeConfig } from '@kubernetes/client-node';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { KubeStandIn } from '../../../test/support/kube-stand-in.js';
import { eventually } from '../../../test/support/runtime-contract.js';
import type { Node } from './api.js';
import { clientApi } from './client-api.js';
import { NodeCatalog, type NodeCatalogOptions } from './node-catalog.js';
import type { Pod } from './objects.js';
import { POD_LABELS } from './pod-spec.js';

let standIn: KubeStandIn;
let config: KubeConfig;
let catalog: NodeCatalog;
let pods: Pod[];
let logged: string[];

function gpuNode(name: string, product: string, gpus: string, labels: Record<string, string> = {}): Node {
  return {
    metadata: { name, labels: { 'nvidia.com/gpu.product': product, ...labels } },
    status: { allocatable: { 'nvidia.com/gpu': gpus } },
  };
}

/** A pod of Corral's as the pod watch sees it: its product's label, the node it is bound to (none: waiting). */
function corralPod(name: string, product: string, gpus: number, node?: string): Pod {
  return {
    metadata: { name, labels: { [POD_LABELS.product]: product } },
    spec: {
      ...(node === undefined ? {} : { nodeName: node }),
      containers: [{ name: 'worker', resources: { limits: { 'nvidia.com/gpu': String(gpus) } } }],
    },
    status: { phase: node === undefined ? 'Pending' : 'Running' },
  } as Pod;
}

function newCatalog(overrides: Partial<NodeCatalogOptions> = {}): NodeCatalog {
  return new NodeCatalog({
    api: clientApi(config),
    logger: pino({ level: 'debug' }, { write: (line: string) => logged.push(line) }),
    configured: ['h100', 'b200'],
    pods: () => pods,
    watchBackoff: { initialMs: 20, maxMs: 100 },
    ...overrides,
  });
}

beforeEach(async () => {
  standIn = new KubeStandIn();
  await standIn.start();
  config = new KubeConfig();
  config.loadFromString(standIn.kubeconfig());
  pods = [];
  logged = [];
  catalog = newCatalog();
});

afterEach(async () => {
  catalog.close();
  await standIn.close();
});

describe('NodeCatalog', () => {
  it('follows the nodes with one list and one watch: a node that joins, one cordoned, one that leaves', async () => {
    standIn.addNode(gpuNode('gpu-1', 'h100', '8'));
    await catalog.start();
    expect(catalog.products().map((p) => [p.id, p.nodes, p.gpusTotal])).toEqual([
      ['h100', 1, 8],
      ['b200', 0, 0],
    ]);
    standIn.addNode(gpuNode('gpu-2', 'b200', '4'));
    await eventually(() =>
      expect(catalog.products().map((p) => [p.id, p.nodes, p.gpusTotal])).toEqual([
        ['h100', 1, 8],
        ['b200', 1, 4],
      ]),
    );
    standIn.patchNode('gpu-1', { spec: { unschedulable: true } });
    standIn.removeNode('gpu-2');
    await eventually(() =>
      expect(catalog.products().map((p) => [p.id, p.nodes, p.gpusTotal])).toEqual([
        ['h100', 0, 0],
        ['b200', 0, 0],
      ]),
    );
    expect([standIn.requests.get('GET nodes'), standIn.requests.get('GET nodes?watch')]).toEqual([1, 1]);
    expect(catalog.stats).toMatchObject({ lists: 1, watches: 1 });
  });

  it("counts what Corral's pods request, bound or waiting, from the next ask after podsChanged", async () => {
    standIn.addNode(gpuNode('gpu-1', 'h100', '8'));
    await catalog.start();
    const free = () => catalog.products().map((p) => [p.id, p.gpusRequested, p.gpusFree, p.gpusWaiting]);
    expect(free()).toEqual([
      ['h100', 0, 8, 0],
      ['b200', 0, 0, 0],
    ]);
    pods = [
      corralPod('p1', 'h100', 2, 'gpu-1'),
      corralPod('p2', 'h100', 1, 'gpu-1'),
      corralPod('p3', 'b200', 1),
    ];
    // The products are kept between asks: the pods are read again only once the adapter says they changed.
    expect(free()).toEqual([
      ['h100', 0, 8, 0],
      ['b200', 0, 0, 0],
    ]);
    catalog.podsChanged();
    expect(free()).toEqual([
      ['h100', 3, 5, 0],
      ['b200', 0, 0, 1],
    ]);
  });

  it("names a product per GPU model the nodes show and gives each product's node label; configured labels win", async () => {
    const configuredLabel = { label: 'pool', value: 'hopper' };
    catalog.close();
    catalog = newCatalog({ products: { h100: configuredLabel } });
    standIn.addNode(gpuNode('gpu-1', 'NVIDIA-B200', '8', { 'nvidia.com/gpu.memory': '183359' }));
    standIn.addNode({
      ...gpuNode('gpu-2', 'other', '8'),
      metadata: { name: 'gpu-2', labels: { pool: 'hopper' } },
    });
    await catalog.start();
    expect(catalog.products().map((p) => [p.id, p.nodes, p.gpusTotal])).toEqual([
      ['h100', 1, 8],
      ['b200', 0, 0],
      ['b200-180g', 1, 8],
    ]);
    expect(catalog.selectors()).toEqual({
      h100: configuredLabel,
      b200: { label: 'nvidia.com/gpu.product', value: 'b200' },
      'b200-180g': { label: 'nvidia.com/gpu.product', value: 'NVIDIA-B200' },
    });
    standIn.removeNode('gpu-1');
    await eventually(() => expect(Object.keys(catalog.selectors())).toEqual(['h100', 'b200']));
  });

  it('nodes that cannot be listed are logged, not thrown: no products meanwhile; after close nothing is listed', async () => {
    standIn.setDown(true);
    await expect(catalog.start()).resolves.toBeUndefined();
    expect(catalog.products().map((p) => p.nodes)).toEqual([0, 0]);
    expect(logged.join('')).toContain('cannot read the cluster nodes');
    standIn.setDown(false);
    standIn.addNode(gpuNode('gpu-1', 'h100', '8'));
    await eventually(() => expect(catalog.products()[0]?.gpusTotal).toBe(8));
    const closed = newCatalog();
    closed.close();
    standIn.resetRequests();
    logged.length = 0;
    await closed.start();
    expect(standIn.requests.get('GET nodes')).toBeUndefined();
    // Not even a warning that the nodes cannot be read: a closed catalogue does not try.
    expect(logged).toEqual([]);
  });
});
