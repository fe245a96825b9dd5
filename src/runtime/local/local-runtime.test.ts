import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { collect, eventually, testWorkerSpec } from '../../../test/support/runtime-contract.js';
import { WORKER_SCRIPT } from '../../../test/support/test-image.js';
import { LABELS, type RuntimeEvent, type WorkerSpec } from '../types.js';
import { LocalRuntime, localWorkerEnv, mountEnvName } from './local-runtime.js';

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

async function readState(stateDir: string, workerId: string): Promise<any> {
  return JSON.parse(await readFile(path.join(stateDir, 'workers', `${workerId}.json`), 'utf8'));
}

describe('localWorkerEnv (pure)', () => {
  const base = {
    PATH: '/usr/bin',
    HOME: '/home/x',
    CORRAL_API_KEY: 'k',
    CORRAL_SECRET_KEY: 's',
    CORRAL_DATABASE_URL: 'postgres://secret',
    CORRAL_API_ADDR: '0.0.0.0:8080',
    CUDA_VISIBLE_DEVICES: '0,1,2,3',
  };

  it('scrubs Corral variables, keeps the rest, replaces PORT and sets GPUs and mounts', () => {
    const env = localWorkerEnv(
      spec({
        workerId: 'w9',
        endpointId: 'e9',
        env: { PORT: '8000', FOO: 'bar', CORRAL_WORKER_ID: 'w9', CORRAL_ENDPOINT_ID: 'e9' },
        gpus: [
          { index: 2, uuid: 'GPU-b' },
          { index: 0, uuid: 'GPU-a' },
        ],
      }),
      base,
      41234,
      [{ mountPath: '/data/models', dir: '/state/volumes/w9/0' }],
    );
    expect(env).toEqual({
      PATH: '/usr/bin',
      HOME: '/home/x',
      FOO: 'bar',
      PORT: '41234',
      CORRAL_WORKER_ID: 'w9',
      CORRAL_ENDPOINT_ID: 'e9',
      NVIDIA_VISIBLE_DEVICES: 'GPU-b,GPU-a',
      CUDA_VISIBLE_DEVICES: 'GPU-b,GPU-a',
      CORRAL_MOUNT_DATA_MODELS: '/state/volumes/w9/0',
    });
  });

  it('hides every GPU from a worker that was given none', () => {
    const env = localWorkerEnv(spec(), base, 1, []);
    expect(env.CUDA_VISIBLE_DEVICES).toBe('');
    expect(env.NVIDIA_VISIBLE_DEVICES).toBe('void');
  });

  it.each([
    ['/data', 'CORRAL_MOUNT_DATA'],
    ['/data/models', 'CORRAL_MOUNT_DATA_MODELS'],
    ['/workspace/my-cache.d/', 'CORRAL_MOUNT_WORKSPACE_MY_CACHE_D'],
    ['/', 'CORRAL_MOUNT_ROOT'],
  ])('mountEnvName(%s) = %s', (mountPath, name) => {
    expect(mountEnvName(mountPath)).toBe(name);
  });
});

describe('LocalRuntime', () => {
  let stateDir: string;
  const runtimes: LocalRuntime[] = [];
  const strays: ChildProcess[] = [];

  function newRuntime(): LocalRuntime {
    const runtime = new LocalRuntime({ stateDir, graceSeconds: 2, pollIntervalMs: 100 });
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
});
