import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { RuntimeError } from '../types.js';
import { readProcStat } from './proc.js';
import {
  childExitWatch,
  type ExitWatch,
  exitOf,
  freePort,
  KILL_WAIT_MS,
  processMatches,
  resolveProgram,
  signalGroup,
  startProcess,
  stopGroup,
  waitForExit,
} from './process-control.js';

/** A watch whose process exits when the test says so. */
function manualWatch(): ExitWatch & { exit(): void; looks: number } {
  let exited = false;
  const wakes = new Set<() => void>();
  return {
    looks: 0,
    exited: () => exited,
    look() {
      this.looks += 1;
    },
    onExit(wake) {
      wakes.add(wake);
      return () => wakes.delete(wake);
    },
    exit() {
      exited = true;
      for (const wake of [...wakes]) wake();
    },
  };
}

describe('exitOf', () => {
  it.each<[number | null, NodeJS.Signals | null, number, string]>([
    [0, null, 0, 'exited with code 0'],
    [3, null, 3, 'exited with code 3'],
    [null, 'SIGKILL', 137, 'killed by SIGKILL'],
    [null, 'SIGTERM', 143, 'killed by SIGTERM'],
    [null, null, 128, 'killed by a signal'],
  ])('code %s, signal %s -> %d', (code, signal, exitCode, message) => {
    expect(exitOf(code, signal)).toEqual({ exitCode, message });
  });
});

describe('waitForExit and stopGroup (manual timers)', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('resolves at once for a process already gone, looking once', async () => {
    const watch = manualWatch();
    watch.exit();
    expect(await waitForExit(watch, 1_000)).toBe(true);
    expect(watch.looks).toBe(1);
  });

  it('resolves true on the exit event, false after the time given, and looks meanwhile', async () => {
    vi.useFakeTimers();
    const watch = manualWatch();
    const early = waitForExit(watch, 1_000);
    watch.exit();
    expect(await early).toBe(true);

    const never = manualWatch();
    const late = waitForExit(never, 1_000);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(await late).toBe(false);
    expect(never.looks).toBeGreaterThan(10);
  });

  it('stops with SIGTERM when that is enough, and kills stray children all the same', async () => {
    vi.useFakeTimers();
    const watch = manualWatch();
    const sent: NodeJS.Signals[] = [];
    const stopped = stopGroup((signal) => sent.push(signal), 2_000, watch);
    expect(sent).toEqual(['SIGTERM']);
    await vi.advanceTimersByTimeAsync(500);
    watch.exit();
    expect(await stopped).toBe(true);
    expect(sent).toEqual(['SIGTERM', 'SIGKILL']);
  });

  it('sends SIGKILL after the grace period, and gives up after the kill wait', async () => {
    vi.useFakeTimers();
    const watch = manualWatch();
    const sent: NodeJS.Signals[] = [];
    const stopped = stopGroup((signal) => sent.push(signal), 2_000, watch);
    await vi.advanceTimersByTimeAsync(1_999);
    expect(sent).toEqual(['SIGTERM']);
    await vi.advanceTimersByTimeAsync(1);
    expect(sent).toEqual(['SIGTERM', 'SIGKILL']);
    await vi.advanceTimersByTimeAsync(KILL_WAIT_MS);
    expect(await stopped).toBe(false);
    expect(sent).toEqual(['SIGTERM', 'SIGKILL', 'SIGKILL']);
  });
});

describe('real processes', () => {
  const children: ChildProcess[] = [];
  const dirs: string[] = [];

  afterEach(async () => {
    for (const child of children.splice(0)) child.kill('SIGKILL');
    for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
  });

  async function logPath(): Promise<string> {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'corral-process-'));
    dirs.push(dir);
    return path.join(dir, 'w.log');
  }

  it('starts a program with its output in the log, in its own process group', async () => {
    const log = await logPath();
    const errors: Error[] = [];
    const child = await startProcess({
      program: 'sh',
      args: ['-c', 'echo out; echo err >&2; echo "$CORRAL_WORKER_ID"'],
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', CORRAL_WORKER_ID: 'pw1' },
      logPath: log,
      onError: (error) => errors.push(error),
    });
    children.push(child);
    expect(await waitForExit(childExitWatch(child), 5_000)).toBe(true);
    expect((await readFile(log, 'utf8')).split('\n').sort()).toEqual(['', 'err', 'out', 'pw1']);
    expect(errors).toEqual([]);
    expect(signalGroup(child.pid, 'SIGKILL')).toBe(false);
  });

  it('fails with RUNTIME_ERROR for a program that does not exist', async () => {
    const start = startProcess({
      program: '/nonexistent/program',
      args: [],
      env: {},
      logPath: await logPath(),
      onError: () => {},
    });
    await expect(start).rejects.toBeInstanceOf(RuntimeError);
    await expect(start).rejects.toMatchObject({
      code: 'RUNTIME_ERROR',
      message: /cannot start "\/nonexistent/,
    });
  });

  it('given a cgroup, enters it (its pid written to cgroup.procs) before the program runs, and fails a missing program at start', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'corral-enter-'));
    const procs = path.join(dir, 'cgroup.procs');
    const out = path.join(dir, 'out');
    const child = await startProcess({
      program: 'sh',
      args: ['-c', `cat ${procs} > ${out}`],
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      logPath: await logPath(),
      onError: () => {},
      cgroupProcs: procs,
    });
    children.push(child);
    await new Promise((resolve) => child.once('exit', resolve));
    // The program read the pid its shell had written: the same process, there before the program ran.
    expect(Number(await readFile(out, 'utf8'))).toBe(child.pid);
    await expect(
      startProcess({
        program: 'no-such-program-here',
        args: [],
        env: { PATH: dir },
        logPath: await logPath(),
        onError: () => {},
        cgroupProcs: procs,
      }),
    ).rejects.toMatchObject({
      code: 'RUNTIME_ERROR',
      message: 'cannot start "no-such-program-here": not found',
    });
    await rm(dir, { recursive: true, force: true });
  });

  it('resolves a program as a spawn would: a path as is, a name on PATH', () => {
    expect(resolveProgram('sh', '/nonexistent:/bin:/usr/bin')).toMatch(/\/sh$/);
    expect(resolveProgram('/bin/sh', undefined)).toBe('/bin/sh');
    expect(resolveProgram('sh', '/nonexistent')).toBeUndefined();
    expect(resolveProgram('/nonexistent/sh', '/bin')).toBeUndefined();
  });

  it.runIf(process.platform === 'linux')('tells its own worker process from others', async () => {
    const child = spawn('sleep', ['30'], {
      env: { ...process.env, CORRAL_WORKER_ID: 'pw2' },
      stdio: 'ignore',
    });
    children.push(child);
    await new Promise((resolve) => child.once('spawn', resolve));
    const pid = child.pid ?? 0;
    const startTime = readProcStat(pid)?.startTime;
    expect(processMatches({ pid, workerId: 'pw2', startTime })).toBe(true);
    expect(processMatches({ pid, workerId: 'pw3', startTime })).toBe(false);
    expect(processMatches({ pid, workerId: 'pw2', startTime: '1' })).toBe(false);
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));
    expect(processMatches({ pid, workerId: 'pw2', startTime })).toBe(false);
  });

  it('finds a free port that is not reserved', async () => {
    const first = await freePort(new Set());
    expect(first).toBeGreaterThan(0);
    expect(await freePort(new Set([first]))).not.toBe(first);
  });
});
