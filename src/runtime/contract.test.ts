import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { crashTestWorker, runtimeContract, testWorkerSpec } from '../../test/support/runtime-contract.js';
import { WORKER_SCRIPT } from '../../test/support/test-image.js';
import { FakeRuntime } from './fake/fake-runtime.js';
import { LocalRuntime } from './local/local-runtime.js';
import { LABELS, type WorkerSpec } from './types.js';

function baseSpec(overrides: Partial<WorkerSpec>): WorkerSpec {
  return testWorkerSpec({ image: 'corral-test-worker:latest', ...overrides });
}

runtimeContract('fake', async () => {
  const runtime = new FakeRuntime({ clock: Date.now });
  runtime.failPull('corral-test/missing:nope');
  return {
    runtime,
    workerSpec: (overrides) => baseSpec(overrides ?? {}),
    unavailableSpec: (overrides) => baseSpec({ ...overrides, image: 'corral-test/missing:nope' }),
    kill: async (worker) => {
      runtime.exit(worker.workerId, 3);
      return 3;
    },
    logLine: async (worker) => {
      runtime.appendLog(worker.workerId, 'hello from the fake');
      return 'hello from the fake';
    },
    engineControls: {
      restart: async (worker) => runtime.restart(worker.workerId),
      pause: async (worker, paused) => runtime.pause(worker.workerId, paused),
    },
    outOfMemory: {
      spec: { memoryBytes: 64 * 1024 * 1024 },
      trigger: async (worker) => runtime.outOfMemory(worker.workerId),
    },
    capabilities: { imagePull: true, realProcess: false },
    pullable: async () => {
      // Only this image is pulled: the other tests' image stays present.
      runtime.presentImages.add(baseSpec({}).image);
      runtime.pullDelayMs = 1;
      return { image: 'corral-test/pullable:1', pulls: async () => runtime.counters.pulls };
    },
    unreachable: async () => {
      const offline = new FakeRuntime({ clock: Date.now });
      offline.unreachable();
      return { runtime: offline, close: () => offline.close() };
    },
    cleanup: () => runtime.close(),
  };
});

runtimeContract('local', async () => {
  const stateDir = await mkdtemp(path.join(os.tmpdir(), 'corral-local-contract-'));
  const runtime = new LocalRuntime({ stateDir, graceSeconds: 2 });
  return {
    runtime,
    workerSpec: (overrides) => baseSpec({ command: [process.execPath, WORKER_SCRIPT], ...overrides }),
    unavailableSpec: (overrides) => baseSpec({ ...overrides, command: ['/nonexistent/corral-test-worker'] }),
    // The worker may still be starting: crashTestWorker retries until it answers.
    kill: crashTestWorker,
    // The test worker logs `worker <id> listening on ...` once it listens.
    logLine: async (worker) => `worker ${worker.workerId} listening`,
    capabilities: { imagePull: false, realProcess: true },
    cleanup: async () => {
      const left = await runtime.list({ [LABELS.managed]: 'true' });
      await Promise.all(left.map((w) => runtime.remove(w.workerId, { graceSeconds: 1 })));
      await runtime.close();
      await rm(stateDir, { recursive: true, force: true });
    },
  };
});
