/**
 * Part 3, the Kubernetes runtime on the in-process API stand-in (test/support/kube-stand-in.ts, a real HTTP server
 * on 127.0.0.1 spoken to by @kubernetes/client-node): the same 1,000 endpoints x 10 workers as in part 1 (b), the
 * kubelet played in process (a new pod is bound and running in one change, no request of its own), the controller
 * placing through the scheduler's placement as `corral serve` wires it on this runtime. The controller creates the
 * 10,000 pods (one API request each), started as `corral serve` starts it: the target is converging in under 60 s.
 * (CORRAL_BENCH_K8S_ADOPT=1: the pods are there before the controller starts, as a restarted `corral serve` finds
 * them, and it adopts them instead.) Then the steady-state `reconcile()` passes, interleaved with the same baseline
 * as part 1 (the store's live versions and the runtime's listing), with the API requests the stand-in received
 * during the steady passes counted: the target is under 200 ms and none. Last, the baseline of the convergence in
 * the same run: the same creates on a fresh stand-in with every endpoint's change made a whole pass, as the
 * controller reconciled before its work queue, for at most the target's 60 s.
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { performance } from 'node:perf_hooks';
import { KubeConfig } from '@kubernetes/client-node';
import { schedulerPlacement } from '../../src/controller/placement/worker-placement.js';
import { pendingRecord } from '../../src/controller/workers/managed-worker.js';
import { buildWorkerSpec } from '../../src/controller/workers/worker-spec.js';
import { clientApi } from '../../src/runtime/kubernetes/client-api.js';
import { KubernetesRuntime } from '../../src/runtime/kubernetes/kubernetes-runtime.js';
import type { Pod } from '../../src/runtime/kubernetes/objects.js';
import { podSpec } from '../../src/runtime/kubernetes/pod-spec.js';
import { LABELS } from '../../src/runtime/types.js';
import { KubeStandIn } from '../../test/support/kube-stand-in.js';
import { formatMs, formatRatio, loadAverage, type Summary, summarize, table } from '../support.js';
import { type BenchRuntime, batchedProbe, converge, describeConvergence } from './converge.js';
import {
  devNullLogger,
  ENDPOINTS,
  KUBERNETES_CONVERGE_MAX_MS,
  KUBERNETES_CONVERGE_TARGET_MS,
  PASS_TARGET_MS,
  STEADY_PASSES,
  STEADY_WARMUP,
  WORKERS_PER_ENDPOINT,
} from './settings.js';

const NAMESPACE = 'corral-workers';
/** Converge by the controller's creates (one request each), unless asked to adopt pods made beforehand. */
const BY_CREATES = process.env.CORRAL_BENCH_K8S_ADOPT !== '1';

function podIp(n: number): string {
  return `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;
}

/** The runtime on a fresh stand-in with one node, whose kubelet (in process) runs each new pod at once. */
export async function kubernetesRuntime(standIn: KubeStandIn): Promise<BenchRuntime<KubernetesRuntime>> {
  await standIn.start();
  standIn.addNode({
    metadata: { name: 'bench-node-1', labels: { 'kubernetes.io/hostname': 'bench-node-1' } },
    status: { allocatable: { cpu: '64', memory: '512Gi', pods: '110000' } },
  });
  let next = 0;
  let seeding = false;
  const stop = standIn.onChange((kind, type, object) => {
    const name = object.metadata?.name ?? '';
    if (kind !== 'pods') return;
    if (type === 'ADDED') {
      if (seeding) return;
      next += 1;
      const ip = podIp(next);
      // After the create's own answer, as a kubelet would be: the watch hears ADDED, then MODIFIED (running).
      setImmediate(() => standIn.runPod(NAMESPACE, name, 'bench-node-1', ip));
    } else if (type === 'MODIFIED' && (object as Pod).metadata?.deletionTimestamp !== undefined) {
      // The container stops at once; the kubelet confirms the deletion.
      setImmediate(() => standIn.deletePodNow(NAMESPACE, name));
    }
  });
  const config = new KubeConfig();
  config.loadFromString(standIn.kubeconfig());
  const runtime = new KubernetesRuntime({
    api: clientApi(config),
    namespace: NAMESPACE,
    logger: devNullLogger(),
    pods: { terminationGraceSeconds: 1 },
  });
  return {
    runtime,
    seed: async (endpoints) => {
      if (!BY_CREATES) {
        // The pods a previous corral serve made for these endpoints, running (built as the runtime builds them).
        seeding = true;
        const now = Date.now();
        for (const endpoint of endpoints) {
          for (let i = 0; i < WORKERS_PER_ENDPOINT; i++) {
            const spec = buildWorkerSpec(endpoint, pendingRecord(endpoint, now), [], {
              storagePaths: new Map(),
            });
            const pod = podSpec(
              spec,
              { product: '', gpuNum: 0, authId: '' },
              {
                namespace: NAMESPACE,
                namePrefix: 'corral-',
                installationLabels: {},
                terminationGraceSeconds: 1,
                networkClaims: {},
              },
            );
            next += 1;
            standIn.seedPod(pod, 'bench-node-1', podIp(next));
          }
        }
        seeding = false;
      }
      await runtime.start();
    },
    placement: schedulerPlacement(runtime.gpuScheduler),
    counters: () => ({
      creates: standIn.requests.get('POST pods') ?? 0,
      removes: standIn.requests.get('DELETE pods') ?? 0,
    }),
    close: async () => {
      stop();
      await runtime.close();
      await standIn.close();
    },
  };
}

export async function benchKubernetes(fakeSteady: Summary | undefined): Promise<void> {
  console.log(
    `\n-- kubernetes runtime on the in-process API stand-in: ${ENDPOINTS.toLocaleString('en')} endpoints x ` +
      `${WORKERS_PER_ENDPOINT} workers (one pod each), kubelet played in process, probe answering on the next ` +
      `turn in one batch (as b), at most ${KUBERNETES_CONVERGE_MAX_MS / 1000} s to converge --`,
  );
  console.log(`load average ${loadAverage()}`);
  const standIn = new KubeStandIn();
  const setup = await converge(batchedProbe(), () => kubernetesRuntime(standIn), KUBERNETES_CONVERGE_MAX_MS);
  const convergeMet = setup.converged && setup.convergeMs < KUBERNETES_CONVERGE_TARGET_MS;
  const { store, runtime, controller } = setup;
  try {
    console.log(
      `converging (${BY_CREATES ? 'the controller creates every pod' : 'the 10,000 pods exist: the controller adopts them'}): ${describeConvergence(setup)}`,
    );
    if (BY_CREATES) {
      console.log(
        `target: ${ENDPOINTS.toLocaleString('en')} endpoints x ${WORKERS_PER_ENDPOINT} workers created through the ` +
          `controller converge in under ${KUBERNETES_CONVERGE_TARGET_MS / 1000} s: ${convergeMet ? 'PASS' : 'MISS'} ` +
          `(${formatMs(setup.convergeMs)} ms${setup.converged ? '' : ', did not converge'})`,
      );
    }
    const failed = controller.workers().filter((w) => w.state === 'failed');
    if (failed.length > 0) {
      const why = new Map<string, number>();
      for (const w of failed)
        why.set(`${w.error}: ${w.message}`, (why.get(`${w.error}: ${w.message}`) ?? 0) + 1);
      console.log(`failed workers: ${[...why].map(([m, n]) => `${n} x ${m}`).join('; ')}`);
    }
    console.log(
      `stand-in requests while converging: ${[...standIn.requests].map(([k, n]) => `${k} ${n}`).join(', ')}`,
    );
    const baseline: number[] = [];
    const steady: number[] = [];
    const baselineOnce = async () => {
      const start = performance.now();
      await store.endpoints.liveVersions();
      await runtime.list({ [LABELS.managed]: 'true' });
      return performance.now() - start;
    };
    const passOnce = async () => {
      const start = performance.now();
      await controller.reconcile();
      return performance.now() - start;
    };
    for (let i = 0; i < STEADY_WARMUP; i++) {
      await baselineOnce();
      await passOnce();
    }
    // CORRAL_BENCH_PROFILE=file.cpuprofile: a CPU profile of the steady passes (and baselines) only.
    const profileTo = process.env.CORRAL_BENCH_PROFILE;
    const session = profileTo ? new Session() : undefined;
    if (session) {
      session.connect();
      await session.post('Profiler.enable');
      await session.post('Profiler.start');
    }
    // Only the steady passes (and their baselines, which call the same runtime) are counted.
    standIn.resetRequests();
    // After the reset: the counters are the stand-in's requests (POST and DELETE pods) since.
    const before = setup.counters();
    const watch = { ...runtime.watchStats };
    let passRequests = 0;
    for (let i = 0; i < STEADY_PASSES; i++) {
      const ahead = standIn.requestCount();
      if (i % 2 === 0) {
        baseline.push(await baselineOnce());
        const at = standIn.requestCount();
        steady.push(await passOnce());
        passRequests += standIn.requestCount() - at;
      } else {
        steady.push(await passOnce());
        passRequests += standIn.requestCount() - ahead;
        baseline.push(await baselineOnce());
      }
    }
    if (session && profileTo) {
      const { profile } = await session.post('Profiler.stop');
      writeFileSync(profileTo, JSON.stringify(profile));
      session.disconnect();
      console.log(`CPU profile of the steady passes: ${profileTo}`);
    }
    const requests = standIn.requestCount();
    const breakdown = [...standIn.requests].map(([k, n]) => `${k} ${n}`).join(', ') || 'none';
    const after = setup.counters();
    const watchChanged = JSON.stringify(watch) !== JSON.stringify(runtime.watchStats);
    const changed =
      after.creates !== before.creates ||
      after.removes !== before.removes ||
      !controller.workers().every((w) => w.state === 'running' && w.healthy);

    const s = summarize(steady);
    const b = summarize(baseline);
    console.log(
      `\nsteady state (kubernetes): ${STEADY_PASSES} passes (after ${STEADY_WARMUP} unmeasured), each ` +
        'interleaved with the baseline; controller loop and probes stopped during them',
    );
    const rows = [
      [
        'steady reconcile() pass',
        String(s.n),
        formatMs(s.p50),
        formatMs(s.p99),
        formatMs(s.max),
        formatRatio(s.p50 / b.p50),
        formatRatio(s.p99 / b.p99),
        fakeSteady ? formatRatio(s.p50 / fakeSteady.p50) : '-',
      ],
      [
        'baseline: endpoints.liveVersions() + runtime.list()',
        String(b.n),
        formatMs(b.p50),
        formatMs(b.p99),
        formatMs(b.max),
        '',
        '',
        '',
      ],
    ];
    console.log(
      table(['figure', 'n', 'p50 ms', 'p99 ms', 'max ms', 'p50/base', 'p99/base', 'p50/fake (b)'], rows),
    );
    console.log(
      `API requests the stand-in received during the ${STEADY_PASSES} steady passes: ${passRequests}; during ` +
        `passes and baselines together: ${requests} (${breakdown}); pod watch ${watchChanged ? 'CHANGED' : 'unchanged'} ` +
        `(lists ${runtime.watchStats.lists}, watches ${runtime.watchStats.watches}, reconnects ` +
        `${runtime.watchStats.reconnects})`,
    );
    if (fakeSteady) {
      console.log(
        `the same pass over the fake runtime in this run (b): p50 ${formatMs(fakeSteady.p50)} ms, p99 ` +
          `${formatMs(fakeSteady.p99)} ms`,
      );
    }
    if (changed) console.log('WARNING: a steady-state pass created, removed or changed workers');
    console.log(`load average after: ${loadAverage()}`);
    const met = setup.converged && !changed && s.p99 < PASS_TARGET_MS && requests === 0;
    console.log(
      `target: one reconcile pass over ${ENDPOINTS.toLocaleString('en')} endpoints x ${WORKERS_PER_ENDPOINT} ` +
        `workers on the kubernetes runtime under ${PASS_TARGET_MS} ms with no API request: ` +
        `${met ? 'PASS' : 'MISS'} (p99 ${formatMs(s.p99)} ms, p50 ${formatMs(s.p50)} ms, ${requests} requests` +
        `${setup.converged ? '' : ', did not converge'}${changed ? ', steady pass changed workers' : ''})`,
    );
  } finally {
    await setup.dispose();
  }
  if (BY_CREATES) await baselineConvergence(setup.convergeMs);
}

/**
 * The same creates with every endpoint's change made a whole pass (what the controller did before its work queue:
 * every finished create and health change reconciled every endpoint), on a fresh stand-in, for at most the target.
 */
async function baselineConvergence(queueMs: number): Promise<void> {
  console.log(
    `\n-- baseline in the same run: the same creates with every endpoint's change made a whole pass (as before ` +
      `the work queue), at most ${KUBERNETES_CONVERGE_TARGET_MS / 1000} s --`,
  );
  console.log(`load average ${loadAverage()}`);
  const standIn = new KubeStandIn();
  const setup = await converge(
    batchedProbe(),
    () => kubernetesRuntime(standIn),
    KUBERNETES_CONVERGE_TARGET_MS,
    (controller) => {
      controller.pokeEndpoint = () => controller.poke();
    },
  );
  try {
    console.log(`converging, whole passes only: ${describeConvergence(setup)}`);
    const healthy = setup.controller.workers().filter((w) => w.state === 'running' && w.healthy).length;
    console.log(
      `work queue against whole passes: ${formatMs(queueMs)} ms for all ${(ENDPOINTS * WORKERS_PER_ENDPOINT).toLocaleString('en')} ` +
        `against ${setup.converged ? `${formatMs(setup.convergeMs)} ms` : `${healthy.toLocaleString('en')} running and healthy after ${formatMs(setup.convergeMs)} ms`}`,
    );
    console.log(`load average after: ${loadAverage()}`);
  } finally {
    await setup.dispose();
  }
}
