import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MemoryCheckpointer } from '../../../test/support/memory-checkpointer.js';
import { collect, eventually, testWorkerSpec } from '../../../test/support/runtime-contract.js';
import { WORKER_SCRIPT } from '../../../test/support/test-image.js';
import { LABELS, type RuntimeEvent, type WorkerSpec } from '../types.js';
import { LocalRuntime } from './local-runtime.js';
import { isFrozen } from './local-tiers.js';

let counter = 0;
function spec(overrides: Partial<WorkerSpec> = {}): WorkerSpec {
  counter += 1;
  return testWorkerSpec({
    image: 'ignored:latest',
    command: [process.execPath, WORKER_SCRIPT],
    workerId: `lw${counter}`,
    endpointId: 'lep',
    ...overrides,
  });
}

/** Alive and not a zombie (an orphan is reaped by whatever init this machine has, maybe late). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^[ZX]/.test(stat.slice(stat.lastIndexOf(')') + 2));
  } catch {
    return true;
  }
}

async function getJson(address: { host: string; port: number } | undefined, route: string): Promise<any> {
  if (!address) throw new Error('no address');
  let last: unknown;
  for (let i = 0; i < 200; i++) {
    try {
      const response = await fetch(`http://${address.host}:${address.port}${route}`);
      return await response.json();
    } catch (error) {
      last = error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  throw last;
}

/** Live processes whose environment names the worker: what a failed create must not leave behind. */
function processesOf(workerId: string): number[] {
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const environ = readFileSync(`/proc/${name}/environ`, 'utf8');
      if (environ.split('\0').includes(`CORRAL_WORKER_ID=${workerId}`) && alive(Number(name)))
        pids.push(Number(name));
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  return pids;
}

/** A logger whose lines the test reads. */
function recordingLogger(): { logger: pino.Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  return {
    logger: pino({ level: 'debug' }, { write: (line: string) => lines.push(JSON.parse(line)) }),
    lines,
  };
}

async function readState(stateDir: string, workerId: string): Promise<any> {
  return JSON.parse(await readFile(path.join(stateDir, 'workers', `${workerId}.json`), 'utf8'));
}

describe('LocalRuntime', () => {
  let stateDir: string;
  const runtimes: LocalRuntime[] = [];
  const strays: ChildProcess[] = [];

  function newRuntime(checkpointer?: MemoryCheckpointer): LocalRuntime {
    const runtime = new LocalRuntime({ stateDir, graceSeconds: 2, pollIntervalMs: 100, checkpointer });
    runtimes.push(runtime);
    return runtime;
  }

  beforeEach(async () => {
    stateDir = await mkdtemp(path.join(os.tmpdir(), 'corral-local-'));
  });

  afterEach(async () => {
    for (const runtime of runtimes.splice(0)) await runtime.close();
    const last = new LocalRuntime({ stateDir });
    for (const w of await last.list({})) await last.remove(w.workerId, { graceSeconds: 1 });
    await last.close();
    await rm(stateDir, { recursive: true, force: true });
  });

  afterAll(() => {
    for (const child of strays) child.kill('SIGKILL');
  });

  it('needs image.command', async () => {
    const runtime = newRuntime();
    await expect(runtime.create(spec({ command: [] }))).rejects.toMatchObject({
      code: 'RUNTIME_ERROR',
      message: 'the local runtime needs image.command',
    });
  });

  it('runs the command with a free host port as PORT, scrubbed env, GPUs and volumes', async () => {
    const runtime = new LocalRuntime({
      stateDir,
      baseEnv: {
        ...process.env,
        CORRAL_API_KEY: 'top-secret',
        CORRAL_SECRET_KEY: 'k',
        CORRAL_DATABASE_URL: 'pg://x',
      },
    });
    runtimes.push(runtime);
    const worker = await runtime.create(
      spec({
        workerId: 'envw',
        gpus: [{ index: 1, uuid: 'GPU-sim-1' }],
        volumes: [{ type: 'local', name: 'v', sizeGB: 1, mountPath: '/data' }],
      }),
    );
    expect(worker.address?.host).toBe('127.0.0.1');
    expect(worker.address?.port).not.toBe(8000);
    const env = await getJson(worker.address, '/env');
    expect(env.PORT).toBe(String(worker.address?.port));
    expect(env.CORRAL_WORKER_ID).toBe('envw');
    expect(env.CORRAL_API_KEY).toBeUndefined();
    expect(env.CORRAL_SECRET_KEY).toBeUndefined();
    expect(env.CORRAL_DATABASE_URL).toBeUndefined();
    expect(env.NVIDIA_VISIBLE_DEVICES).toBe('GPU-sim-1');
    expect(env.CUDA_VISIBLE_DEVICES).toBe('GPU-sim-1');
    const volume = path.join(stateDir, 'volumes', 'envw', '0');
    expect(env.CORRAL_MOUNT_DATA).toBe(volume);
    expect(existsSync(volume)).toBe(true);

    const state = await readState(stateDir, 'envw');
    expect(state).toMatchObject({ workerId: 'envw', port: worker.address?.port, labels: worker.labels });
    expect(alive(state.pid)).toBe(true);
    expect(JSON.stringify(state)).not.toContain('top-secret');

    await runtime.remove('envw');
    expect(alive(state.pid)).toBe(false);
    expect(existsSync(volume)).toBe(false);
    expect(existsSync(path.join(stateDir, 'workers', 'envw.json'))).toBe(false);
    expect(existsSync(path.join(stateDir, 'logs', 'envw.log'))).toBe(false);
  });

  it('adopts still-running workers after a restart, watches them, and removes them', async () => {
    const first = newRuntime();
    const created = await first.create(spec({ workerId: 'adoptme' }));
    const { pid } = await readState(stateDir, 'adoptme');
    await first.close();

    const second = newRuntime();
    const events: RuntimeEvent[] = [];
    second.watch((e) => events.push(e));
    const [adopted] = await second.list({ [LABELS.endpoint]: 'lep' });
    expect(adopted).toMatchObject({ workerId: 'adoptme', phase: 'running', address: created.address });
    expect(adopted?.labels).toEqual(created.labels);
    expect(await getJson(adopted?.address, '/env')).toMatchObject({ CORRAL_WORKER_ID: 'adoptme' });
    expect(await second.stats('adoptme')).toMatchObject({ memoryBytes: expect.any(Number) });

    // A crash of an adopted worker is seen by polling (its exit code is not ours to know).
    const third = await second.create(spec({ workerId: 'adopt2' }));
    await fetch(`http://127.0.0.1:${adopted?.address?.port}/crash`, { method: 'POST' }).then((r) => r.text());
    await eventually(() =>
      expect(events).toContainEqual({ type: 'exited', workerId: 'adoptme', exitCode: -1 }),
    );
    expect(alive(pid)).toBe(false);
    expect(await second.inspect('adoptme')).toMatchObject({ phase: 'exited' });

    // An adopted live worker is stopped by remove.
    await second.close();
    const fourth = newRuntime();
    expect((await fourth.inspect('adoptme'))?.phase).toBe('exited');
    const { pid: pid2 } = await readState(stateDir, 'adopt2');
    expect((await fourth.inspect('adopt2'))?.address).toEqual(third.address);
    await fourth.remove('adopt2', { graceSeconds: 2 });
    expect(alive(pid2)).toBe(false);
    expect(await fourth.list({})).toHaveLength(1);
  });

  it('adopts a frozen (stopped) worker after a restart in the frozen tier, without asking the driver; a thaw lets it answer', async () => {
    // It holds GPU memory: the driver, asked of a stopped process that holds its GPU state, never answers.
    let cgroup: { kind: 'v2' | 'v1'; path: string } | undefined;
    const checkpointer = new MemoryCheckpointer({
      gpus: { 'GPU-0': 80e9 },
      stopped: (p) => isFrozen({ pid: p, cgroup }),
    });
    const first = newRuntime(checkpointer);
    const created = await first.create(spec({ workerId: 'frozenone' }));
    await getJson(created.address, '/env');
    const { pid, cgroup: recorded } = await readState(stateDir, 'frozenone');
    cgroup = recorded;
    checkpointer.addProcess({ pid, gpuUuid: 'GPU-0', usedBytes: 10e9 });
    await first.idleTiers.freeze('frozenone');
    await first.close();

    const second = newRuntime(checkpointer);
    const [adopted] = await second.list({ [LABELS.worker]: 'frozenone' });
    expect(adopted).toMatchObject({ workerId: 'frozenone', phase: 'running', tier: 'frozen' });
    expect(checkpointer.stateCalls).toBe(0);
    await second.idleTiers.thaw('frozenone');
    expect((await second.inspect('frozenone'))?.tier).toBeUndefined();
    expect(await getJson(adopted?.address, '/env')).toMatchObject({ CORRAL_WORKER_ID: 'frozenone' });
    await second.remove('frozenone', { graceSeconds: 2 });
  });

  it("suspends in the driver's order (the process running while it is checkpointed, stopped after), is adopted suspended after a restart, and restores", async () => {
    // The checkpointer's driver refuses a frozen process, as the real one does: its cgroup (or /proc) says whether it is.
    let cgroup: { kind: 'v2' | 'v1'; path: string } | undefined;
    const checkpointer = new MemoryCheckpointer({
      gpus: { 'GPU-0': 80e9 },
      stopped: (p) => isFrozen({ pid: p, cgroup }),
    });
    const first = newRuntime(checkpointer);
    const created = await first.create(spec({ workerId: 'suspendme' }));
    await getJson(created.address, '/env');
    const { pid, cgroup: recorded } = await readState(stateDir, 'suspendme');
    cgroup = recorded;
    checkpointer.addProcess({ pid, gpuUuid: 'GPU-0', usedBytes: 40e9 });
    await first.idleTiers.freeze('suspendme');
    const state = await first.idleTiers.suspend('suspendme', { deadlineMs: 5_000 });
    expect(state).toEqual({ gpuBytes: { 'GPU-0': 40e9 } });
    expect(checkpointer.usedBytes('GPU-0')).toBe(0);
    expect(isFrozen({ pid, cgroup })).toBe(true);
    await first.close();

    // The GPU memory it held is on its state file: a restarted runtime lists it with the suspended worker.
    // The driver is asked with the worker thawed for the question (it does not answer of a stopped process), and the
    // worker is frozen again after.
    const second = newRuntime(checkpointer);
    expect(await second.inspect('suspendme')).toMatchObject({
      tier: 'suspended',
      suspendedGpuBytes: { 'GPU-0': 40e9 },
    });
    expect(isFrozen({ pid, cgroup })).toBe(true);
    await second.idleTiers.restore('suspendme', { deadlineMs: 5_000 });
    expect(checkpointer.usedBytes('GPU-0')).toBe(40e9);
    expect(await getJson(created.address, '/env')).toMatchObject({ CORRAL_WORKER_ID: 'suspendme' });
    expect(checkpointer.calls).toEqual([`suspend ${pid}`, `resume ${pid}`]);
    const restored = await second.inspect('suspendme');
    expect(restored?.tier).toBeUndefined();
    expect(restored?.suspendedGpuBytes).toBeUndefined();
    expect((await readState(stateDir, 'suspendme')).suspendedGpuBytes).toBeUndefined();
    await second.remove('suspendme', { graceSeconds: 2 });
  });

  it('does not adopt (nor kill) a recycled pid', async () => {
    const sleeper = spawn('sleep', ['60'], { stdio: 'ignore' });
    strays.push(sleeper);
    const pid = sleeper.pid ?? 0;
    await new Promise((resolve) => sleeper.once('spawn', resolve));
    await mkdir(path.join(stateDir, 'workers'), { recursive: true });
    await writeFile(
      path.join(stateDir, 'workers', 'ghost.json'),
      JSON.stringify({
        version: 1,
        workerId: 'ghost',
        endpointId: 'lep',
        revision: 1,
        labels: { [LABELS.endpoint]: 'lep', [LABELS.worker]: 'ghost', [LABELS.managed]: 'true' },
        port: 1,
        pid,
        startTime: '1',
        createdAt: 1,
        startedAt: 1,
        gpuUuids: [],
      }),
    );
    const runtime = newRuntime();
    expect(await runtime.inspect('ghost')).toMatchObject({ phase: 'exited', exitCode: -1 });
    await runtime.remove('ghost');
    expect(alive(pid)).toBe(true);
    expect(await runtime.inspect('ghost')).toBeUndefined();
    sleeper.kill('SIGKILL');
  });

  it('remove kills the whole process group, with SIGKILL after the grace period', async () => {
    const runtime = newRuntime();
    const pidFile = path.join(stateDir, 'grandchild.pid');
    await runtime.create(
      spec({
        workerId: 'group',
        command: ['sh', '-c', `trap '' TERM; sleep 300 & echo $! > ${pidFile}; wait`],
      }),
    );
    await eventually(async () => expect((await readFile(pidFile, 'utf8')).trim()).toMatch(/^\d+$/));
    const grandchild = Number((await readFile(pidFile, 'utf8')).trim());
    expect(alive(grandchild)).toBe(true);
    const started = Date.now();
    await runtime.remove('group', { graceSeconds: 1 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    await eventually(() => expect(alive(grandchild)).toBe(false), 3_000);
  });

  it('reports a worker killed by a signal with 128 + the signal number', async () => {
    const runtime = newRuntime();
    const events: RuntimeEvent[] = [];
    runtime.watch((e) => events.push(e));
    await runtime.create(spec({ workerId: 'killed' }));
    const { pid } = await readState(stateDir, 'killed');
    process.kill(pid, 'SIGKILL');
    await eventually(() =>
      expect(events).toContainEqual({ type: 'exited', workerId: 'killed', exitCode: 137 }),
    );
    expect(await runtime.inspect('killed')).toMatchObject({ phase: 'exited', exitCode: 137 });
    // The exit survives a restart.
    const again = newRuntime();
    expect(await again.inspect('killed')).toMatchObject({ phase: 'exited', exitCode: 137 });
  });

  it('tails long logs and ends a follow when the worker exits', async () => {
    const runtime = newRuntime();
    const script =
      'for (let i = 0; i < 5000; i++) console.log("line " + i); setTimeout(() => console.log("late"), 1500);';
    await runtime.create(spec({ workerId: 'chatty', command: [process.execPath, '-e', script] }));
    await eventually(async () =>
      expect(await collect(runtime.logs('chatty', { follow: false }))).toHaveLength(5000),
    );
    const followed = await collect(runtime.logs('chatty', { follow: true, tail: 2 }));
    expect(followed).toEqual(['line 4998', 'line 4999', 'late']);
    const all = await collect(runtime.logs('chatty', { follow: false }));
    expect(all).toHaveLength(5001);
    expect(await collect(runtime.logs('chatty', { follow: false, tail: 3 }))).toEqual([
      'line 4998',
      'line 4999',
      'late',
    ]);
  });

  it('stamps createdAt with the injected clock', async () => {
    const runtime = new LocalRuntime({ stateDir, clock: () => 42_000 });
    runtimes.push(runtime);
    const worker = await runtime.create(spec({ workerId: 'clocked' }));
    expect(worker.createdAt).toBe(42_000);
    expect(await readState(stateDir, 'clocked')).toMatchObject({ createdAt: 42_000, startedAt: 42_000 });
    expect(await runtime.stats('clocked')).toMatchObject({ cpuPercent: expect.any(Number) });
  });

  it.runIf(process.platform === 'linux')(
    'fails a create whose state file cannot be written, and stops its process',
    async () => {
      const { logger } = recordingLogger();
      const runtime = new LocalRuntime({ stateDir, logger });
      runtimes.push(runtime);
      const events: RuntimeEvent[] = [];
      runtime.watch((e) => events.push(e));
      // A directory where the state file goes: the rename onto it fails, as a full or read-only disk would.
      // Unique to this test run: processesOf looks at every process on the machine.
      const workerId = `unrecorded${process.pid}`;
      await mkdir(path.join(stateDir, 'workers', `${workerId}.json`), { recursive: true });
      await expect(runtime.create(spec({ workerId }))).rejects.toMatchObject({
        code: 'RUNTIME_ERROR',
        message: expect.stringMatching(
          new RegExp(`^cannot write the state file of worker ${workerId}, so it was stopped`),
        ),
      });
      expect(processesOf(workerId)).toEqual([]);
      expect(await runtime.inspect(workerId)).toBeUndefined();
      expect(events).toEqual([]);
      expect(existsSync(path.join(stateDir, 'logs', `${workerId}.log`))).toBe(false);
    },
  );

  it('logs a listener that throws, and still tells the other listeners', async () => {
    const { logger, lines } = recordingLogger();
    const runtime = new LocalRuntime({ stateDir, logger });
    runtimes.push(runtime);
    const events: RuntimeEvent[] = [];
    runtime.watch(() => {
      throw new Error('listener bug');
    });
    runtime.watch((e) => events.push(e));
    await runtime.create(spec({ workerId: 'heard' }));
    expect(events).toEqual([{ type: 'started', workerId: 'heard' }]);
    expect(lines).toContainEqual(
      expect.objectContaining({
        level: 50,
        runtime: 'local',
        msg: 'runtime event handler threw',
        err: expect.objectContaining({ message: 'listener bug' }),
      }),
    );
  });

  it('logs a state directory it cannot load when watched, and fails the calls that need it', async () => {
    const { logger, lines } = recordingLogger();
    const notADir = path.join(stateDir, 'a-file');
    await writeFile(notADir, '');
    const runtime = new LocalRuntime({ stateDir: notADir, logger });
    runtimes.push(runtime);
    runtime.watch(() => {});
    await expect(runtime.list({})).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    expect(lines).toContainEqual(
      expect.objectContaining({ level: 50, msg: 'cannot load the local runtime state', stateDir: notADir }),
    );
  });

  it('warns of a state file it cannot read (its process would run on unwatched)', async () => {
    await mkdir(path.join(stateDir, 'workers'), { recursive: true });
    await writeFile(path.join(stateDir, 'workers', 'torn.json'), '{"version":1,');
    const { logger, lines } = recordingLogger();
    const runtime = new LocalRuntime({ stateDir, logger });
    runtimes.push(runtime);
    expect(await runtime.list({})).toEqual([]);
    expect(lines).toContainEqual(
      expect.objectContaining({
        level: 40,
        msg: 'skipping an unreadable local worker state file',
        file: 'torn.json',
      }),
    );
  });
});
