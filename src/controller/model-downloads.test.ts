/**
 * A worker of an endpoint that names models waits in `downloading`, holding no GPU, until they are on the machine:
 * the controller over the fake runtime with an in-memory cache whose download the test advances by hand.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type ControllerHarness, controllerHarness } from '../../test/support/controller-harness.js';
import { MemoryModelCache } from '../../test/support/memory-model-cache.js';
import { progressMessage } from '../domain/transfer-text.js';
import type { WorkerSpec } from '../runtime/types.js';

const TINY = { name: 'acme/tiny', revision: 'main', allowPatterns: [], tokenSecret: 'hf' };

describe('models before a GPU is held', () => {
  let h: ControllerHarness | undefined;
  afterEach(async () => {
    await h?.close();
  });

  it('shows downloading with its progress and holds no GPU, then places and starts the worker', async () => {
    const cache = new MemoryModelCache({
      hubDir: '/cache/hub',
      models: [{ name: 'acme/tiny', bytes: 14.9e9 }],
    });
    const tokens: string[] = [];
    h = await controllerHarness({
      models: {
        cache,
        token: async (ownerId, model) => {
          tokens.push(`${ownerId}:${model.tokenSecret}`);
          return 'hf_value';
        },
      },
    });
    const harness = h;
    const specs: WorkerSpec[] = [];
    const create = harness.runtime.create.bind(harness.runtime);
    harness.runtime.create = (spec, onProgress) => {
      specs.push(spec);
      return create(spec, onProgress);
    };
    const endpoint = await harness.create({
      workers: { minWorkers: 1, maxWorkers: 1, gpusPerWorker: 1 },
      models: [TINY],
    });
    harness.controller.start();
    await harness.eventually(() => {
      expect(harness.controller.workersOf(endpoint.id).map((w) => w.state)).toEqual(['downloading']);
    });
    expect(harness.controller.heldGpus().size).toBe(0);
    cache.advance(TINY, 3.2e9, 410e6);
    await harness.eventually(() => {
      expect(harness.controller.workersOf(endpoint.id)[0]?.message).toBe(
        'model acme/tiny: 3.2 of 14.9 GB, 410 MB/s, about 29 s left',
      );
    });
    expect(harness.controller.heldGpus().size).toBe(0);
    expect(cache.tokensSeen).toContain('hf_value');
    await harness.timers.advanceSettling(7_000);
    cache.finish(TINY);
    await harness.eventually(() => {
      expect(harness.controller.workersOf(endpoint.id)[0]?.state).toBe('running');
    });
    expect(harness.controller.heldGpus().size).toBe(1);
    const [spec] = specs;
    expect(spec?.volumes.map((v) => v.mountPath)).toEqual([
      '/runpod-volume/huggingface-cache/hub/models--acme--tiny',
    ]);
    // The requests that waited for this cold start are told the download's wait (Server-Timing: model;dur=).
    const phases = harness.routes.routableWorkers(endpoint.id)[0]?.wake?.phases ?? [];
    expect(phases.map((phase) => phase.name)).toEqual(['model', 'placement', 'pull', 'create', 'ready']);
    expect(phases[0]?.ms).toBeGreaterThanOrEqual(7_000);
    expect(phases[0]?.ms).toBeLessThan(8_000);
    expect(phases[1]?.ms).toBeLessThan(1_000);
    // The token went to the cache, never into the worker.
    expect(JSON.stringify(spec?.env)).not.toContain('hf_value');
  });
});

describe('progressMessage', () => {
  it.each([
    [
      { bytesDone: 3.2e9, bytesTotal: 14.9e9, bytesPerSecond: 410e6 },
      'model acme/tiny: 3.2 of 14.9 GB, 410 MB/s, about 29 s left',
    ],
    [{ bytesDone: 0, bytesTotal: 1e9, bytesPerSecond: 0 }, 'model acme/tiny: 0.0 of 1.0 GB'],
    // Below 1 MB/s: the rate in kB/s, never `0 MB/s` beside hours left.
    [
      { bytesDone: 0.1e9, bytesTotal: 3.0e9, bytesPerSecond: 197e3 },
      'model acme/tiny: 0.1 of 3.0 GB, 197 kB/s, about 4 h 6 min left',
    ],
  ])('%j', (numbers, message) => {
    expect(progressMessage({ name: 'acme/tiny', revision: 'main', ...numbers })).toBe(message);
  });
});
