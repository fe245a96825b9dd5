/**
 * Controller benchmark (issue: workers). Three parts (the third, issue 12, after the first two in this text):
 *
 * 1. Fake runtime: a real SQLite store (temp file, WAL, as `corral serve` opens it) seeded with 1,000 endpoints of
 *    10 workers each (minNum = maxNum = 10, gpuNum 0 so that placement never blocks), a FakeRuntime and a
 *    Controller started as `corral serve` starts it (start(): its timer and its own pokes), until all 10,000
 *    workers are running and healthy in the controller and in the store (at most 60 s); every pass is timed, the
 *    first (cold) one created everything. Twice, on fresh stores: (a) with a probe that answers true at once,
 *    (b) with one that answers true at once but in one batch per event-loop turn. On (b), the controller's loop
 *    and probes are then stopped and 20 steady-state `reconcile()` passes are timed one by one, interleaved
 *    with the baseline: the two reads every pass must do (`store.endpoints.liveVersions()` and
 *    `runtime.list({'corral.dev/managed': 'true'})`) and nothing else. Design target: a pass under 200 ms.
 *
 * 2. Docker (skipped with the reason when the engine does not answer): the real DockerRuntime, the test worker
 *    image (built locally by scripts/build-test-image.sh), a real store and the controller and gateway built by
 *    `buildTraffic` as `corral serve` builds them (real HTTP probe, serve's default settings). Five times: an
 *    endpoint with minNum 1 is written to the store and the controller poked (as the API does) and the time
 *    until its worker is `running` and healthy in the store (what the API shows) is measured, with where it
 *    went (until the controller decided on a worker, the container started, the probe passed). Beside each
 *    run, the floor: the same image started by `docker run -d` and by the engine API (create + start, what
 *    DockerRuntime calls), timed to its /health answering 200, probed every 5 ms. The engine is shared with
 *    other work on this machine, so the controller's runtime is scoped to this run's owner label (the
 *    controller would otherwise adopt and remove every Corral container it finds); every container this bench
 *    made is removed by label at the end, also on failure.
 *
 * 3. Kubernetes (kubernetes.ts): the 1,000 endpoints x 10 workers created through the controller on the Kubernetes
 *    runtime over the in-process API stand-in (target: converged in under 60 s), then part 1 (b)'s steady passes
 *    there, with the API requests of the steady passes counted (target: none), compared with their baseline and
 *    with part 1's; last, the same creates with every endpoint's change made a whole pass (the controller before
 *    its work queue), as the convergence's baseline in the same run. `npm run bench -- controller-kubernetes` runs
 *    part 1 and this one only.
 *
 * Everything is bounded in count and time; workers listen on 127.0.0.1 only.
 *
 * Files: settings.ts (counts, limits, the logger), store.ts (the temp SQLite store), converge.ts and
 * fake-runtime.ts (part 1), scoped-runtime.ts, controller-run.ts, baselines.ts, docker.ts and docker-report.ts
 * (part 2), kubernetes.ts (part 3).
 */
import { benchDocker } from './docker.js';
import { benchFake } from './fake-runtime.js';
import { benchKubernetes } from './kubernetes.js';

export async function runControllerBench(): Promise<void> {
  console.log('\n== Controller (issue: workers) ==');
  console.log('command: npm run bench -- controller');
  const fake = await benchFake();
  await benchDocker();
  await benchKubernetes(fake);
}

/** Parts 1 and 3 only (no Docker engine needed). */
export async function runControllerKubernetesBench(): Promise<void> {
  console.log('\n== Controller on the kubernetes runtime (issue 12) ==');
  console.log('command: npm run bench -- controller-kubernetes');
  await benchKubernetes(await benchFake());
}
