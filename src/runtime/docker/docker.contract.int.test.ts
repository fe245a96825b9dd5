import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import pino from 'pino';
import { describe, it } from 'vitest';
import { integrationAvailable } from '../../../test/support/integration.js';
import { runtimeContract, testWorkerSpec } from '../../../test/support/runtime-contract.js';
import {
  dockerAvailable,
  ensureTestImage,
  pushTestImageCopy,
  removeLabelled,
  TEST_IMAGE,
} from '../../../test/support/test-image.js';
import { REGISTRY_BIN, type TestRegistry, testRegistry } from '../../../test/support/test-registry.js';
import { LABELS, type WorkerSpec } from '../types.js';
import { DockerRuntime } from './docker-runtime.js';

const RUN_LABEL = 'corral.dev/test-run';

const withDocker = integrationAvailable(
  'Docker',
  dockerAvailable(),
  'start dockerd (or run scripts/provision.sh) so that `docker info` answers',
);

if (withDocker) {
  runtimeContract('docker', async () => {
    const run = randomUUID().slice(0, 8);
    const docker = new Docker();
    const image = await ensureTestImage();
    // The suite hands out fake GPU uuids: ask the engine for none (no GPU here), as with a simulated inventory.
    const runtime = new DockerRuntime({
      docker,
      logger: pino({ level: 'silent' }),
      namePrefix: `corral-ct-${run}-`,
      requestGpuDevices: false,
    });
    // Every container of this run carries the run label, so that cleanup finds all of them.
    const spec = (overrides: Partial<WorkerSpec> = {}): WorkerSpec =>
      testWorkerSpec({ image, ...overrides }, { [RUN_LABEL]: run });
    // A registry on 127.0.0.1 (the only one reachable here) for the pull test, where the package is installed.
    let registry: TestRegistry | undefined;
    let registryDir: string | undefined;
    let pushed: string | undefined;
    const containerOf = async (workerId: string) => {
      const [container] = await docker.listContainers({
        all: true,
        filters: { label: [`${LABELS.worker}=${workerId}`, `${RUN_LABEL}=${run}`] },
      });
      if (!container) throw new Error(`no container for ${workerId}`);
      return docker.getContainer(container.Id);
    };
    return {
      runtime,
      workerSpec: spec,
      ...(existsSync(REGISTRY_BIN)
        ? {
            pullable: async () => {
              registryDir = mkdtempSync(join(tmpdir(), 'corral-ct-registry-'));
              registry = await testRegistry(registryDir);
              await registry.start();
              // Absent from the engine: prepareImage must pull it.
              pushed = await pushTestImageCopy(`${registry.address}/contract/worker:${run}`);
              const pulls = async () => registry?.enginePulls() ?? 0;
              return { image: pushed, pulls };
            },
          }
        : {}),
      unavailableSpec: (overrides) => spec({ ...overrides, image: 'corral-does-not-exist:nope' }),
      kill: async (worker) => {
        await (await containerOf(worker.workerId)).kill();
        return 137;
      },
      engineControls: {
        restart: async (worker) => {
          await (await containerOf(worker.workerId)).restart({ t: 1 });
        },
        pause: async (worker, paused) => {
          const container = await containerOf(worker.workerId);
          await (paused ? container.pause() : container.unpause());
        },
      },
      // The test worker allocates 256 MiB as soon as it listens: over a 64 MiB limit, the OOM killer ends it.
      outOfMemory: { spec: { memoryBytes: 64 * 1024 * 1024, env: { ALLOCATE_MB: '256' } } },
      logLine: async (worker) => `worker ${worker.workerId} listening`,
      capabilities: { imagePull: true, realProcess: true },
      unreachable: async () => {
        const offline = new DockerRuntime({
          docker: new Docker({ socketPath: `/tmp/corral-ct-${run}-nobody.sock` }),
          logger: pino({ level: 'silent' }),
        });
        return { runtime: offline, close: () => offline.close() };
      },
      cleanup: async () => {
        await runtime.close();
        await removeLabelled(docker, `${RUN_LABEL}=${run}`);
        if (pushed) execFileSync('docker', ['rmi', '-f', pushed], { stdio: 'ignore' });
        await registry?.stop();
        if (registryDir) rmSync(registryDir, { recursive: true, force: true });
      },
    };
  });
} else {
  describe.skip(`WorkerRuntime contract: docker (${TEST_IMAGE})`, () => {
    it('needs a Docker engine', () => undefined);
  });
}
