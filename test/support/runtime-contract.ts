/**
 * The behaviour every WorkerRuntime shares (docker, local, fake; kubernetes later). A runtime's test file calls
 * `runtimeContract(name, setup)`; what legitimately differs between runtimes is declared in `capabilities`, and the
 * way to kill a worker or to make a create fail comes from the setup.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  LABELS,
  RuntimeError,
  type RuntimeErrorCode,
  type RuntimeEvent,
  type RuntimeWorker,
  type WorkerRuntime,
  type WorkerSpec,
} from '../../src/runtime/types.js';

export interface RuntimeCapabilities {
  /** The runtime pulls images: a missing image fails with IMAGE_PULL_FAILED (else RUNTIME_ERROR). */
  imagePull: boolean;
  /** Workers are real processes answering HTTP on their address. */
  realProcess: boolean;
  /**
   * prepareImage pulls (default: as imagePull). Kubernetes: where the cluster has GPU nodes (pre-pull pods pull onto
   * them); on a cluster without, prepareImage answers at once and a missing image fails the create.
   */
  prepareImage?: boolean;
  /**
   * Why this setup cannot read workers' logs and stats, where it cannot (a real Kubernetes API server with no kubelet
   * or metrics server behind it): the cases that need them are skipped with this reason.
   */
  noLogsOrStats?: string;
}

export interface RuntimeContractSetup {
  runtime: WorkerRuntime;
  /** A spec that starts a healthy worker; the suite passes unique workerId/endpointId overrides. */
  workerSpec: (overrides?: Partial<WorkerSpec>) => WorkerSpec;
  /** A spec whose create must fail: a missing image (fake: after failPull; docker: a nonexistent tag; local: a
   * command that does not exist). */
  unavailableSpec: (overrides?: Partial<WorkerSpec>) => WorkerSpec;
  /** Makes the worker die (fake.exit, POST /crash, docker kill); resolves to the exit code watch must report. */
  kill: (worker: RuntimeWorker) => Promise<number>;
  /**
   * Where the runtime enforces a memory limit: a spec whose worker goes over it (a real runtime: the test worker's
   * ALLOCATE_MB above `memoryBytes`), and what else makes it do so (the fake: outOfMemory). Absent: not enforced.
   */
  outOfMemory?: {
    spec: Partial<WorkerSpec> & { memoryBytes: number };
    trigger?: (worker: RuntimeWorker) => Promise<void>;
  };
  /**
   * Where the runtime's engine can restart or pause a worker behind Corral's back (docker restart, docker pause;
   * the fake's restart and pause): does so. Absent (local, kubernetes): no engine does that to a worker.
   */
  engineControls?: {
    restart: (worker: RuntimeWorker) => Promise<void>;
    pause: (worker: RuntimeWorker, paused: boolean) => Promise<void>;
  };
  /** Makes the worker write a line to its output, or waits for one it writes anyway; resolves to a substring of it. */
  logLine: (worker: RuntimeWorker) => Promise<string>;
  capabilities: RuntimeCapabilities;
  /**
   * For runtimes that pull: an image absent from the runtime that a pull can get, and how many pulls the runtime
   * (or its registry) has served so far.
   */
  pullable?: () => Promise<{ image: string; pulls: () => Promise<number> }>;
  /**
   * The same runtime with an engine it cannot reach (docker: a socket nobody listens on; fake: unreachable()), for
   * runtimes that have an engine; `close` ends it.
   */
  unreachable?: () => Promise<{ runtime: WorkerRuntime; close(): Promise<void> }>;
  cleanup(): Promise<void>;
}

/** How long real runtimes get for things that happen asynchronously (exits, log lines, HTTP answers). */
const EVENTUALLY_MS = 15_000;

export function runtimeContract(name: string, setup: () => Promise<RuntimeContractSetup>): void {
  describe(`WorkerRuntime contract: ${name}`, () => {
    let ctx: RuntimeContractSetup;
    let runtime: WorkerRuntime;
    const events: RuntimeEvent[] = [];
    let unwatch: () => void = () => {};
    const run = randomUUID().slice(0, 8);
    let counter = 0;

    /** Unique ids per test so that a shared engine (Docker) never mixes tests up. */
    function ids(): { endpointId: string; workerId: () => string } {
      counter += 1;
      const endpointId = `ct${run}e${counter}`;
      let n = 0;
      return {
        endpointId,
        workerId: () => {
          n += 1;
          return `${endpointId}w${n}`;
        },
      };
    }

    function spec(endpointId: string, workerId: string, overrides: Partial<WorkerSpec> = {}): WorkerSpec {
      return ctx.workerSpec({ endpointId, workerId, ...overrides });
    }

    /** A new worker, and a watcher of its own that collects every event from now on (`stop` ends it). */
    async function watchedWorker() {
      const { endpointId, workerId } = ids();
      const id = workerId();
      const worker = await runtime.create(spec(endpointId, id));
      const seen: RuntimeEvent[] = [];
      const stop = runtime.watch((event) => seen.push(event));
      return { endpointId, id, worker, seen, stop };
    }

    beforeAll(async () => {
      ctx = await setup();
      runtime = ctx.runtime;
      unwatch = runtime.watch((event) => events.push(event));
    });

    afterAll(async () => {
      unwatch();
      await ctx?.cleanup();
    });

    it('create returns a started worker with its address, labels and GPUs', async () => {
      const { endpointId, workerId } = ids();
      const id = workerId();
      const gpus = [
        { index: 1, uuid: 'GPU-contract-1' },
        { index: 0, uuid: 'GPU-contract-0', simulated: true },
      ];
      const worker = await runtime.create(
        spec(endpointId, id, { labels: { 'example.com/team': 'a' }, revision: 3, ownerId: 'owner-1', gpus }),
      );
      expect(worker.workerId).toBe(id);
      expect(worker.endpointId).toBe(endpointId);
      expect(worker.revision).toBe(3);
      expect(['starting', 'running']).toContain(worker.phase);
      expect(worker.address?.host).toEqual(expect.any(String));
      expect(Number.isInteger(worker.address?.port) && (worker.address?.port ?? 0) > 0).toBe(true);
      expect(worker.labels).toMatchObject({
        'example.com/team': 'a',
        [LABELS.managed]: 'true',
        [LABELS.endpoint]: endpointId,
        [LABELS.worker]: id,
        [LABELS.revision]: '3',
        [LABELS.owner]: 'owner-1',
      });
      expect(worker.gpuUuids).toEqual(['GPU-contract-1', 'GPU-contract-0']);
      expect(typeof worker.createdAt).toBe('number');

      const inspected = await runtime.inspect(id);
      expect(inspected?.workerId).toBe(id);
      expect(inspected?.labels).toEqual(worker.labels);
      expect(inspected?.address).toEqual(worker.address);
      expect(inspected?.gpuUuids).toEqual(['GPU-contract-1', 'GPU-contract-0']);
      await runtime.remove(id, { graceSeconds: 1 });
    });

    it('a listed worker carries the GPU uuids it was created with, real or simulated (what a restart adopts)', async () => {
      const { endpointId, workerId } = ids();
      const withGpus = workerId();
      const without = workerId();
      await runtime.create(
        spec(endpointId, withGpus, {
          gpus: [
            { index: 3, uuid: 'GPU-simulated-h100-80g-3', simulated: true },
            { index: 2, uuid: 'GPU-simulated-h100-80g-2', simulated: true },
          ],
        }),
      );
      await runtime.create(spec(endpointId, without));
      const listed = await runtime.list({ [LABELS.endpoint]: endpointId });
      const gpusOf = (id: string) => listed.find((w) => w.workerId === id)?.gpuUuids;
      expect(gpusOf(withGpus)).toEqual(['GPU-simulated-h100-80g-3', 'GPU-simulated-h100-80g-2']);
      expect(gpusOf(without)).toEqual([]);
      // Corral's bookkeeping is not among the worker's own labels.
      for (const worker of listed) expect(Object.keys(worker.labels)).not.toContain('corral.dev/gpus');
      await Promise.all([withGpus, without].map((id) => runtime.remove(id, { graceSeconds: 1 })));
    });

    it('list by labels finds exactly the matching workers', async () => {
      const a = ids();
      const b = ids();
      const a1 = a.workerId();
      const a2 = a.workerId();
      const b1 = b.workerId();
      await Promise.all([
        runtime.create(spec(a.endpointId, a1, { labels: { 'example.com/role': 'x' } })),
        runtime.create(spec(a.endpointId, a2, { revision: 2 })),
        runtime.create(spec(b.endpointId, b1)),
      ]);
      const idsOf = (workers: RuntimeWorker[]) => workers.map((w) => w.workerId).sort();
      expect(idsOf(await runtime.list({ [LABELS.endpoint]: a.endpointId }))).toEqual([a1, a2].sort());
      expect(idsOf(await runtime.list({ [LABELS.endpoint]: b.endpointId }))).toEqual([b1]);
      expect(idsOf(await runtime.list({ [LABELS.worker]: a2 }))).toEqual([a2]);
      expect(idsOf(await runtime.list({ [LABELS.endpoint]: a.endpointId, [LABELS.revision]: '2' }))).toEqual([
        a2,
      ]);
      expect(idsOf(await runtime.list({ [LABELS.endpoint]: a.endpointId, 'example.com/role': 'x' }))).toEqual(
        [a1],
      );
      expect(await runtime.list({ [LABELS.endpoint]: `${a.endpointId}-none` })).toEqual([]);
      const managed = idsOf(await runtime.list({ [LABELS.managed]: 'true' }));
      expect(managed).toEqual(expect.arrayContaining([a1, a2, b1]));
      await Promise.all([a1, a2, b1].map((id) => runtime.remove(id, { graceSeconds: 1 })));
    });

    it('an engine that cannot be reached fails every call with RuntimeError UNAVAILABLE, the same for every runtime', async (context) => {
      if (!ctx.unreachable) return context.skip();
      const { endpointId, workerId } = ids();
      const offline = await ctx.unreachable();
      try {
        const calls = [
          () => offline.runtime.list({ [LABELS.managed]: 'true' }),
          () => offline.runtime.inspect(workerId()),
          () => offline.runtime.create(spec(endpointId, workerId())),
          () => offline.runtime.remove(workerId()),
          () => offline.runtime.prepareImage({ image: ctx.workerSpec().image }),
        ];
        for (const call of calls) {
          const error = await call().then(
            () => undefined,
            (e: unknown) => e,
          );
          expect(error).toBeInstanceOf(RuntimeError);
          expect((error as RuntimeError).code).toBe('UNAVAILABLE');
          expect((error as RuntimeError).message).toMatch(/cannot reach the .*(engine|API server)/);
        }
      } finally {
        await offline.close();
      }
    });

    it('inspect of an unknown worker is undefined', async () => {
      expect(await runtime.inspect(`ct${run}-unknown`)).toBeUndefined();
    });

    it('remove is idempotent, reports the removal and the worker is gone', async () => {
      const { endpointId, workerId } = ids();
      const id = workerId();
      await runtime.create(spec(endpointId, id));
      await runtime.remove(id, { graceSeconds: 1 });
      expect(await runtime.inspect(id)).toBeUndefined();
      expect(await runtime.list({ [LABELS.endpoint]: endpointId })).toEqual([]);
      await runtime.remove(id, { graceSeconds: 1 });
      await runtime.remove(`ct${run}-never-existed`);
      await eventually(() => expect(events).toContainEqual({ type: 'removed', workerId: id }));
      // Concurrent removes of the same worker both succeed.
      const id2 = workerId();
      await runtime.create(spec(endpointId, id2));
      await Promise.all([runtime.remove(id2, { graceSeconds: 1 }), runtime.remove(id2, { graceSeconds: 1 })]);
      expect(await runtime.inspect(id2)).toBeUndefined();
    });

    it('create that cannot get its image fails with a RuntimeError and leaves nothing behind', async () => {
      const { endpointId, workerId } = ids();
      const id = workerId();
      const expected: RuntimeErrorCode = ctx.capabilities.imagePull ? 'IMAGE_PULL_FAILED' : 'RUNTIME_ERROR';
      const error = await runtime.create(ctx.unavailableSpec({ endpointId, workerId: id })).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(RuntimeError);
      expect((error as RuntimeError).code).toBe(expected);
      expect((error as RuntimeError).message).not.toBe('');
      expect(await runtime.list({ [LABELS.endpoint]: endpointId })).toEqual([]);
      expect(await runtime.inspect(id)).toBeUndefined();
    });

    it('prepareImage makes the image present (at once when it is there); one that cannot be had fails with IMAGE_PULL_FAILED', async () => {
      const present = ctx.workerSpec();
      await runtime.prepareImage({ image: present.image });
      const missing = ctx.unavailableSpec();
      const error = await runtime.prepareImage({ image: missing.image }).then(
        () => undefined,
        (e: unknown) => e,
      );
      if (!(ctx.capabilities.prepareImage ?? ctx.capabilities.imagePull)) {
        // No images (local), or no node to pull onto (kubernetes without GPU nodes): nothing that can fail.
        expect(error).toBeUndefined();
        return;
      }
      expect(error).toBeInstanceOf(RuntimeError);
      expect((error as RuntimeError).code).toBe('IMAGE_PULL_FAILED');
      expect((error as RuntimeError).message).toContain(missing.image);
    });

    it('an image prepareImage pulled (with progress) is not pulled again by a create', async (context) => {
      if (!ctx.pullable) return context.skip();
      const { endpointId, workerId } = ids();
      const { image, pulls } = await ctx.pullable();
      const initial = await pulls();
      const progress: string[] = [];
      await runtime.prepareImage({ image }, (p) => progress.push(p.message));
      expect(progress.length).toBeGreaterThan(0);
      expect(progress.every((line) => line.startsWith(`pulling ${image}`))).toBe(true);
      const before = await pulls();
      expect(before).toBeGreaterThan(initial);
      const created: string[] = [];
      const id = workerId();
      await runtime.create(spec(endpointId, id, { image }), (p) => created.push(p.message));
      expect(created).toEqual([]);
      expect(await pulls()).toBe(before);
      await runtime.remove(id, { graceSeconds: 1 });
    });

    it('the worker has an address, where a real process answers HTTP', async () => {
      const { endpointId, workerId } = ids();
      const id = workerId();
      const worker = await runtime.create(spec(endpointId, id));
      const address = worker.address;
      // 127.0.0.1 (published ports, local processes) or a pod's own loopback address (the test kubelet's pod IPs).
      expect(address?.host).toMatch(/^127\.\d+\.\d+\.\d+$/);
      expect(address?.port).toBeGreaterThan(0);
      if (!address || !ctx.capabilities.realProcess) {
        await runtime.remove(id, { graceSeconds: 1 });
        return;
      }
      await eventually(async () => {
        const response = await fetch(`http://${address.host}:${address.port}/`, {
          signal: AbortSignal.timeout(2_000),
        });
        await response.arrayBuffer();
        expect(response.status).toBeGreaterThanOrEqual(200);
      });
      await runtime.remove(id, { graceSeconds: 1 });
    });

    it('watch reports the exit code of a worker that dies; it stays listed as exited until removed', async () => {
      const { endpointId, id, worker, seen, stop } = await watchedWorker();
      try {
        const code = await ctx.kill(worker);
        await eventually(() => expect(seen).toContainEqual({ type: 'exited', workerId: id, exitCode: code }));
        await eventually(async () => {
          const after = await runtime.inspect(id);
          expect(after?.phase).toBe('exited');
          expect(after?.exitCode).toBe(code);
        });
        const listed = await runtime.list({ [LABELS.endpoint]: endpointId });
        expect(listed.map((w) => [w.workerId, w.phase])).toEqual([[id, 'exited']]);
        // Killed, not out of memory: no limit was set.
        expect(listed[0]?.exitReason).toBeUndefined();
      } finally {
        stop();
      }
      await runtime.remove(id, { graceSeconds: 1 });
      expect(await runtime.list({ [LABELS.endpoint]: endpointId })).toEqual([]);
    });

    it('a worker the OOM killer ends is listed and inspected as out-of-memory, with its limit', async (test) => {
      const oom = ctx.outOfMemory;
      if (!oom) return test.skip();
      const { endpointId, workerId } = ids();
      const id = workerId();
      const base = spec(endpointId, id);
      const worker = await runtime.create({ ...base, ...oom.spec, env: { ...base.env, ...oom.spec.env } });
      await oom.trigger?.(worker);
      await eventually(async () => {
        const [listed] = await runtime.list({ [LABELS.endpoint]: endpointId });
        expect(listed).toMatchObject({ phase: 'exited', exitReason: 'out-of-memory' });
        expect(listed?.memoryLimitBytes).toBe(oom.spec.memoryBytes);
        const inspected = await runtime.inspect(id);
        expect(inspected).toMatchObject({ phase: 'exited', exitReason: 'out-of-memory' });
        expect(inspected?.message).toContain(
          `out of memory: limit ${oom.spec.memoryBytes / 1024 / 1024} MiB`,
        );
      });
      await runtime.remove(id, { graceSeconds: 1 });
    });

    it('a worker its engine restarts: watch reports its exit and start, and it is listed running where it answers', async (test) => {
      const controls = ctx.engineControls;
      if (!controls) return test.skip();
      const { endpointId, id, worker, seen, stop } = await watchedWorker();
      try {
        await controls.restart(worker);
        await eventually(() => {
          const mine = seen.filter((event) => event.workerId === id).map((event) => event.type);
          expect(mine.indexOf('stopping')).toBeGreaterThanOrEqual(0);
          expect(mine.indexOf('exited')).toBeGreaterThan(mine.indexOf('stopping'));
          expect(mine.lastIndexOf('started')).toBeGreaterThan(mine.indexOf('exited'));
        });
        const [listed] = await runtime.list({ [LABELS.endpoint]: endpointId });
        expect(listed?.phase).toBe('running');
        expect(listed?.address).toEqual((await runtime.inspect(id))?.address);
        if (ctx.capabilities.realProcess) {
          const address = listed?.address ?? { host: '', port: 0 };
          await eventually(async () => {
            const response = await fetch(`http://${address.host}:${address.port}/health`, {
              signal: AbortSignal.timeout(2_000),
            });
            expect(response.status).toBe(200);
          });
        }
        await controls.pause(worker, true);
        await eventually(() => expect(seen).toContainEqual({ type: 'paused', workerId: id }));
        await controls.pause(worker, false);
        await eventually(() => expect(seen).toContainEqual({ type: 'resumed', workerId: id }));
      } finally {
        stop();
      }
      await runtime.remove(id, { graceSeconds: 1 });
    });

    it('freeze stops every process of a worker and thaw lets it answer again; frozen, it is listed in the frozen tier; both are idempotent', async (test) => {
      const tiers = runtime.idleTiers;
      if (!tiers) return test.skip();
      const { endpointId, workerId } = ids();
      const id = workerId();
      const worker = await runtime.create(spec(endpointId, id));
      const address = worker.address ?? { host: '', port: 0 };
      const health = () =>
        fetch(`http://${address.host}:${address.port}/health`, { signal: AbortSignal.timeout(1_000) });
      if (ctx.capabilities.realProcess)
        await eventually(async () => expect((await health()).status).toBe(200));
      await tiers.freeze(id);
      await tiers.freeze(id);
      const [frozen] = await runtime.list({ [LABELS.endpoint]: endpointId });
      expect(frozen).toMatchObject({ workerId: id, phase: 'running', tier: 'frozen' });
      expect((await runtime.inspect(id))?.tier).toBe('frozen');
      // Stopped, it answers nothing: the request waits until its deadline.
      if (ctx.capabilities.realProcess) await expect(health()).rejects.toThrow();
      await tiers.thaw(id);
      await tiers.thaw(id);
      const [thawed] = await runtime.list({ [LABELS.endpoint]: endpointId });
      expect(thawed?.tier).toBeUndefined();
      if (ctx.capabilities.realProcess) expect((await health()).status).toBe(200);
      if (!tiers.suspendable.available) {
        expect(tiers.suspendable.reason).toBe('no GPU checkpoint support built');
        await expect(tiers.suspend(id, { deadlineMs: 1_000 })).rejects.toBeInstanceOf(RuntimeError);
      }
      await runtime.remove(id, { graceSeconds: 1 });
    });

    it('a frozen worker is removed like any other (its stop is not held up by the freeze), and freeze of an unknown worker fails with NOT_FOUND', async (test) => {
      const tiers = runtime.idleTiers;
      if (!tiers) return test.skip();
      const { endpointId, workerId } = ids();
      const id = workerId();
      await runtime.create(spec(endpointId, id));
      await tiers.freeze(id);
      const started = Date.now();
      await runtime.remove(id, { graceSeconds: 1 });
      expect(Date.now() - started).toBeLessThan(EVENTUALLY_MS);
      expect(await runtime.inspect(id)).toBeUndefined();
      await expect(tiers.freeze(`${endpointId}nope`)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    });

    it('an unsubscribed watcher hears nothing more', async () => {
      const { endpointId, workerId } = ids();
      const id = workerId();
      await runtime.create(spec(endpointId, id));
      const seen: RuntimeEvent[] = [];
      const stop = runtime.watch((event) => seen.push(event));
      stop();
      await runtime.remove(id, { graceSeconds: 1 });
      await eventually(() => expect(events).toContainEqual({ type: 'removed', workerId: id }));
      expect(seen).toEqual([]);
    });

    it('logs yield the worker output line by line, with tail and follow', async (context) => {
      const { noLogsOrStats } = ctx.capabilities;
      if (noLogsOrStats) return context.skip(noLogsOrStats);
      const { endpointId, workerId } = ids();
      const id = workerId();
      const worker = await runtime.create(spec(endpointId, id));
      const expected = await ctx.logLine(worker);
      await eventually(async () => {
        const lines = await collect(runtime.logs(id, { follow: false }));
        expect(lines.some((line) => line.includes(expected))).toBe(true);
        for (const line of lines) expect(line).not.toContain('\n');
      });
      const all = await collect(runtime.logs(id, { follow: false }));
      const last = await collect(runtime.logs(id, { follow: false, tail: 1 }));
      expect(last).toEqual(all.slice(-1));
      expect(await collect(runtime.logs(id, { follow: false, tail: 0 }))).toEqual([]);

      // follow: yields what is there, then waits; aborting ends the iteration.
      const controller = new AbortController();
      const followed: string[] = [];
      const done = (async () => {
        for await (const line of runtime.logs(id, { follow: true, signal: controller.signal })) {
          followed.push(line);
          if (line.includes(expected)) controller.abort();
        }
      })();
      await withTimeout(done, EVENTUALLY_MS, 'a followed log did not end on abort');
      expect(followed.some((line) => line.includes(expected))).toBe(true);
      await runtime.remove(id, { graceSeconds: 1 });
    });

    it('a log followed before a removal keeps its lines and ends once the worker is removed', async (context) => {
      const { noLogsOrStats } = ctx.capabilities;
      if (noLogsOrStats) return context.skip(noLogsOrStats);
      const { endpointId, workerId } = ids();
      const id = workerId();
      const worker = await runtime.create(spec(endpointId, id));
      const expected = await ctx.logLine(worker);
      await eventually(async () => {
        const lines = await collect(runtime.logs(id, { follow: false }));
        expect(lines.some((line) => line.includes(expected))).toBe(true);
      });
      let opened!: () => void;
      const open = new Promise<void>((resolve) => {
        opened = resolve;
      });
      const followed = collect(runtime.logs(id, { follow: true, onOpen: () => opened() }));
      await withTimeout(open, EVENTUALLY_MS, 'a followed log never said it was open');
      await runtime.remove(id, { graceSeconds: 1 });
      const lines = await withTimeout(followed, EVENTUALLY_MS, 'a followed log did not end with its worker');
      expect(lines.some((line) => line.includes(expected))).toBe(true);
    });

    it('logs of an unknown worker fail with NOT_FOUND', async () => {
      const error = await collect(runtime.logs(`ct${run}-unknown`, { follow: false })).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(RuntimeError);
      expect((error as RuntimeError).code).toBe('NOT_FOUND');
    });

    it('stats are numbers for a live worker and undefined for an unknown one', async (context) => {
      const { noLogsOrStats } = ctx.capabilities;
      if (noLogsOrStats) return context.skip(noLogsOrStats);
      const { endpointId, workerId } = ids();
      const id = workerId();
      await runtime.create(spec(endpointId, id));
      await eventually(async () => {
        const stats = await runtime.stats(id);
        expect(stats).toBeDefined();
        expect(stats?.cpuPercent).toBeGreaterThanOrEqual(0);
        expect(stats?.memoryBytes).toBeGreaterThanOrEqual(0);
      });
      expect(await runtime.stats(`ct${run}-unknown`)).toBeUndefined();
      await runtime.remove(id, { graceSeconds: 1 });
    });

    it('creating a worker id that exists fails with RUNTIME_ERROR and leaves the first one alone', async () => {
      const { endpointId, workerId } = ids();
      const id = workerId();
      const first = await runtime.create(spec(endpointId, id));
      const error = await runtime.create(spec(endpointId, id)).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(RuntimeError);
      expect((error as RuntimeError).code).toBe('RUNTIME_ERROR');
      const listed = await runtime.list({ [LABELS.endpoint]: endpointId });
      expect(listed.map((w) => w.workerId)).toEqual([id]);
      expect(listed[0]?.address).toEqual(first.address);
      await runtime.remove(id, { graceSeconds: 1 });
    });
  });
}

/**
 * Kills a test worker that runs as a real process (`POST /crash`: it exits with 1), which may not listen yet when its
 * runtime says it runs: retried until it answers, for up to 10 s. Returns the exit code it will have.
 */
export async function crashTestWorker(worker: RuntimeWorker): Promise<number> {
  const address = worker.address;
  if (!address) throw new Error('no address');
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      const response = await fetch(`http://${address.host}:${address.port}/crash`, { method: 'POST' });
      await response.arrayBuffer();
      return 1;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

/**
 * A worker spec for runtime tests: `workerId`/`endpointId` default to `w1`/`ep1`, the env a worker gets is filled
 * in from them, and `extraLabels` go on top of any labels in `overrides` (a run label that cleanup looks for).
 */
export function testWorkerSpec(
  overrides: Partial<WorkerSpec> & { image: string },
  extraLabels: Record<string, string> = {},
): WorkerSpec {
  const workerId = overrides.workerId ?? 'w1';
  const endpointId = overrides.endpointId ?? 'ep1';
  return {
    workerId,
    endpointId,
    ownerId: 'owner-a',
    revision: 1,
    command: [],
    env: { PORT: '8000', CORRAL_ENDPOINT_ID: endpointId, CORRAL_WORKER_ID: workerId },
    port: 8000,
    gpus: [],
    volumes: [],
    ...overrides,
    labels: { ...overrides.labels, ...extraLabels },
  };
}

/** Retries `check` (it throws until it passes) every 50 ms, for at most `ms`. */
export function eventually<T>(check: () => T | Promise<T>, ms = EVENTUALLY_MS): Promise<T> {
  return vi.waitFor(check, { timeout: ms, interval: 50 });
}

export async function collect(lines: AsyncIterable<string>): Promise<string[]> {
  const out: string[] = [];
  for await (const line of lines) out.push(line);
  return out;
}

async function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(message)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
