import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { KubeStandIn } from '../../../test/support/kube-stand-in.js';
import { ConfigError } from '../../config/settings.js';
import {
  connectKubernetes,
  type KubernetesSettings,
  productNodeLabel,
  productNodeLabels,
} from './connect.js';

const logger = pino({ level: 'silent' });
const dir = mkdtempSync(join(tmpdir(), 'corral-k8s-connect-'));
let standIn: KubeStandIn;

beforeAll(async () => {
  standIn = new KubeStandIn();
  await standIn.start();
});

afterAll(async () => {
  await standIn.close();
  rmSync(dir, { recursive: true, force: true });
});

function settings(kubeconfig: string): KubernetesSettings {
  return {
    kubeconfig,
    namespace: 'corral-workers',
    products: [{ id: 'h100-80g', nodeLabel: 'nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3' }],
    networkStorages: [],
    gpuResource: 'nvidia.com/gpu',
    terminationGraceSeconds: 10,
  };
}

async function failure(promise: Promise<unknown>): Promise<Error> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ConfigError);
  return error as Error;
}

describe('connectKubernetes', () => {
  it('connects to the cluster of the kubeconfig and watches the namespace', async () => {
    const path = join(dir, 'ok');
    writeFileSync(path, standIn.kubeconfig());
    const runtime = await connectKubernetes(settings(path), { logger, installationId: 'i1' });
    expect(runtime.server).toBe(standIn.url);
    expect(await runtime.list({})).toEqual([]);
    await runtime.close();
  });

  it('a product configured by its gpuModel is found on the nodes GPU feature discovery labels with that model', async () => {
    standIn.addNode({
      metadata: { name: 'gfd-node-1', labels: { 'nvidia.com/gpu.product': 'NVIDIA-A100-SXM4-40GB' } },
      spec: {},
      status: { allocatable: { 'nvidia.com/gpu': '4' } },
    });
    const path = join(dir, 'gfd');
    writeFileSync(path, standIn.kubeconfig());
    const runtime = await connectKubernetes(
      {
        ...settings(path),
        products: [{ id: 'a100-40g', gpuModel: 'NVIDIA-A100-SXM4-40GB' }],
      },
      { logger, installationId: 'i2' },
    );
    try {
      await vi.waitFor(() =>
        expect(runtime.gpuScheduler.products()).toEqual([
          expect.objectContaining({ id: 'a100-40g', gpusTotal: 4, gpusFree: 4 }),
        ]),
      );
    } finally {
      await runtime.close();
      standIn.removeNode('gfd-node-1');
    }
  });

  it('a kubeconfig that is not there stops start-up with one line naming the setting', async () => {
    const error = await failure(connectKubernetes(settings(join(dir, 'missing')), { logger }));
    expect(error.message).toBe(
      `invalid --kubeconfig (CORRAL_KUBECONFIG): no kubeconfig at ${join(dir, 'missing')}`,
    );
  });

  it('a cluster that cannot be reached stops start-up with one line naming the setting and the server', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const path = join(dir, 'unreachable');
    writeFileSync(path, standIn.kubeconfig().replace(standIn.url, `http://127.0.0.1:${port}`));
    const error = await failure(connectKubernetes(settings(path), { logger }));
    expect(error.message).toMatch(
      new RegExp(
        `^cannot use the Kubernetes cluster of --kubeconfig \\(CORRAL_KUBECONFIG\\) \\(http://127\\.0\\.0\\.1:${port}, namespace corral-workers\\): cannot reach the Kubernetes API server`,
      ),
    );
    expect(error.message).not.toContain('\n');
  });

  it('a server that accepts and never answers stops start-up after the start timeout', async () => {
    const silent = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as { port: number }).port;
    const path = join(dir, 'silent');
    writeFileSync(path, standIn.kubeconfig().replace(standIn.url, `http://127.0.0.1:${port}`));
    try {
      const error = await failure(connectKubernetes(settings(path), { logger, startTimeoutMs: 300 }));
      expect(error.message).toContain('the API server gave no answer within 0.3 s');
    } finally {
      silent.close();
    }
  });
});

describe('productNodeLabels', () => {
  it.each([
    [
      'nodeLabel wins',
      { id: 'h100-80g', nodeLabel: 'example.com/pool=h100', gpuModel: 'NVIDIA-H100-80GB-HBM3' },
      { label: 'example.com/pool', value: 'h100' },
    ],
    [
      'gpuModel on nvidia.com/gpu.product',
      { id: 'h100-80g', gpuModel: 'NVIDIA-H100-80GB-HBM3' },
      { value: 'NVIDIA-H100-80GB-HBM3' },
    ],
    ['neither: the default (the product id)', { id: 'h100-80g' }, undefined],
    ['an empty gpuModel: the default', { id: 'h100-80g', gpuModel: '' }, undefined],
    [
      'spaces become dashes, as GFD writes the model',
      { id: 'h100-80g', gpuModel: 'NVIDIA H100 80GB HBM3' },
      { value: 'NVIDIA-H100-80GB-HBM3' },
    ],
    ['a model that is no label value: the default', { id: 'h100-80g', gpuModel: 'H100 (80 GB)' }, undefined],
  ])('%s', (_, product, expected) => {
    expect(productNodeLabels([product])['h100-80g']).toEqual(expected);
  });
});

describe('productNodeLabel', () => {
  it.each([
    [
      'nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3',
      { label: 'nvidia.com/gpu.product', value: 'NVIDIA-H100-80GB-HBM3' },
    ],
    ['example.com/pool=a100', { label: 'example.com/pool', value: 'a100' }],
    ['NVIDIA-A100-SXM4-80GB', { value: 'NVIDIA-A100-SXM4-80GB' }],
  ])('%s', (text, expected) => {
    expect(productNodeLabel(text)).toEqual(expected);
  });
});
