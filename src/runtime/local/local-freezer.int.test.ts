import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, rmdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { testWorkerSpec } from '../../../test/support/runtime-contract.js';
import { findFreezer } from '../cgroups/cgroup-freezer.js';
import { LABELS } from '../types.js';
import { LocalRuntime } from './local-runtime.js';

/**
 * A worker whose leader and a child that left its session and process group (setsid) each count in a file every
 * 20 ms: a count that does not move is a process that is stopped.
 */
function countingCommand(dir: string): string[] {
  const count = (file: string) => `i=0; while :; do i=$((i+1)); echo $i > ${file}; sleep 0.02; done`;
  const escaped = `echo $$ > ${dir}/child.pid; ${count(`${dir}/child.count`)}`;
  return ['/bin/sh', '-c', `setsid /bin/sh -c '${escaped}' & ${count(`${dir}/leader.count`)}`];
}

function readCount(file: string): number {
  try {
    return Number(readFileSync(file, 'utf8').trim());
  } catch {
    return 0;
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Whether each counter moves: within 3 s where `expected` says it should (a thawed process may be scheduled late
 * on a loaded machine), else over 500 ms (at 20 ms a count, a running process would have moved 25 times).
 */
async function moving(dir: string, expected: boolean): Promise<{ leader: boolean; child: boolean }> {
  const files = { leader: `${dir}/leader.count`, child: `${dir}/child.count` };
  const before = { leader: readCount(files.leader), child: readCount(files.child) };
  const moved = () => ({
    leader: readCount(files.leader) !== before.leader,
    child: readCount(files.child) !== before.child,
  });
  const end = Date.now() + (expected ? 3_000 : 500);
  for (;;) {
    await sleep(50);
    const now = moved();
    if ((expected && now.leader && now.child) || Date.now() >= end) return now;
  }
}

async function until(check: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('timed out');
    await sleep(20);
  }
}

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
    return false;
  }
}

/** The session id (field 6) of a process. */
function sessionOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[3]);
}

const probes = (['cgroup-v2', 'cgroup-v1'] as const).map((kind) => ({
  kind,
  found: findFreezer(kind, 'corral-freezer-probe'),
}));
const kinds = probes.filter((p) => p.found.kind !== 'process-group').map((p) => p.kind);

afterAll(async () => {
  for (const { found } of probes) if (found.kind !== 'process-group') await rmdir(found.base).catch(() => {});
});

describe('the local runtime freezes a worker through its cgroup', () => {
  let dir: string;
  let stateDir: string;
  const runtimes: LocalRuntime[] = [];

  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'corral-freezer-'));
    stateDir = path.join(dir, 'state');
  });

  afterEach(async () => {
    for (const runtime of runtimes.splice(0)) await runtime.close();
    const last = new LocalRuntime({ stateDir });
    for (const w of await last.list({})) await last.remove(w.workerId, { graceSeconds: 1 });
    await last.close();
    await rm(dir, { recursive: true, force: true });
  });

  function runtime(freezer: 'cgroup-v2' | 'cgroup-v1' | 'process-group'): LocalRuntime {
    const created = new LocalRuntime({ stateDir, graceSeconds: 1, pollIntervalMs: 50, freezer });
    runtimes.push(created);
    return created;
  }

  it('finds a cgroup freezer on this host (root with a writable cgroup; the tests below need one)', () => {
    expect(kinds.length).toBeGreaterThan(0);
  });

  it.each(kinds)(
    '%s: a child that called setsid is frozen and thawed with its leader; a restarted runtime adopts it frozen; removal kills both and removes the cgroup',
    async (kind) => {
      const first = runtime(kind);
      const worker = await first.create(
        testWorkerSpec({
          image: 'ignored:latest',
          workerId: `fz-${kind}`,
          endpointId: 'fep',
          command: countingCommand(dir),
        }),
      );
      await until(() => existsSync(`${dir}/child.pid`) && readCount(`${dir}/child.count`) > 0);
      const state = JSON.parse(
        await readFile(path.join(stateDir, 'workers', `${worker.workerId}.json`), 'utf8'),
      );
      const leader = state.pid as number;
      const child = Number(readFileSync(`${dir}/child.pid`, 'utf8'));
      expect(sessionOf(child)).not.toBe(sessionOf(leader));
      expect(state.cgroup).toMatchObject({ kind: kind.slice('cgroup-'.length) });
      const procs = readFileSync(path.join(state.cgroup.path, 'cgroup.procs'), 'utf8')
        .split('\n')
        .map(Number);
      expect(procs).toEqual(expect.arrayContaining([leader, child]));
      expect(await moving(dir, true)).toEqual({ leader: true, child: true });

      await first.idleTiers.freeze(worker.workerId);
      expect(await moving(dir, false)).toEqual({ leader: false, child: false });
      await first.close();

      const second = runtime(kind);
      const [adopted] = await second.list({ [LABELS.worker]: worker.workerId });
      expect(adopted).toMatchObject({ phase: 'running', tier: 'frozen' });
      expect(await moving(dir, false)).toEqual({ leader: false, child: false });
      await second.idleTiers.thaw(worker.workerId);
      expect((await second.inspect(worker.workerId))?.tier).toBeUndefined();
      expect(await moving(dir, true)).toEqual({ leader: true, child: true });

      await second.idleTiers.freeze(worker.workerId);
      await second.remove(worker.workerId, { graceSeconds: 1 });
      await until(() => !alive(leader) && !alive(child));
      expect(existsSync(state.cgroup.path)).toBe(false);
    },
  );

  it('without a cgroup (the process group), the child that called setsid runs on while its leader is stopped', async () => {
    const local = runtime('process-group');
    expect(local.idleTiers.freezerNote).toMatch(
      /^its process group is stopped \(a process that left it runs on\)/,
    );
    const worker = await local.create(
      testWorkerSpec({
        image: 'ignored:latest',
        workerId: 'fz-pgrp',
        endpointId: 'fep',
        command: countingCommand(dir),
      }),
    );
    await until(() => existsSync(`${dir}/child.pid`) && readCount(`${dir}/child.count`) > 0);
    const child = Number(readFileSync(`${dir}/child.pid`, 'utf8'));
    await local.idleTiers.freeze(worker.workerId);
    await sleep(100); // A SIGSTOP is delivered after kill() returns.
    expect(await moving(dir, false)).toEqual({ leader: false, child: true });
    await local.remove(worker.workerId, { graceSeconds: 1 });
    process.kill(child, 'SIGKILL');
  });
});
