/**
 * The cgroup freezer, shared by the local runtime and the node agent (src/node/): finding a writable one at start
 * (cgroup v2, else the v1 freezer, else the reason there is none), one cgroup per local worker (made before its
 * process starts, which enters it before it execs), and what is done to a worker's or a pod's cgroup: freeze and thaw (waiting until the kernel says every process is stopped or running),
 * its state read back after a restart, its processes listed and killed, and its removal.
 */
import fs from 'node:fs';
import path from 'node:path';
import { RuntimeError } from '../types.js';
import {
  type CgroupKind,
  type CgroupPlace,
  cgroupPlaces,
  freezerCommand,
  freezerFiles,
  freezerStateOf,
} from './cgroup-hierarchy.js';

/** A worker's cgroup, as its state file records it. */
export interface WorkerCgroup {
  kind: CgroupKind;
  path: string;
}

/** Which freezer the local runtime uses: the best found (`auto`), one in particular, or none (the process group). */
export type FreezerChoice = 'auto' | 'cgroup-v2' | 'cgroup-v1' | 'process-group';

/** A usable hierarchy: the directory worker cgroups are made in. */
export type FreezerFound = { kind: CgroupKind; base: string } | { kind: 'process-group'; reason: string };

/** How long a freeze or thaw may take to be seen done. */
export const FREEZE_WAIT_MS = 5_000;
const POLL_MS = 5;
/** How long a cgroup whose processes are exiting may stay busy before its removal gives up. */
const REMOVE_WAIT_MS = 3_000;

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * The freezer to use: a directory `name` made in this process's cgroup in the first hierarchy that takes it and has
 * the freezer's control file; or, where none does, why (for the start-up log and the frozen workers' message).
 */
export function findFreezer(choice: FreezerChoice, name: string): FreezerFound {
  if (choice === 'process-group') return { kind: 'process-group', reason: 'the process group was chosen' };
  let places: CgroupPlace[];
  try {
    places = cgroupPlaces(
      fs.readFileSync('/proc/self/mountinfo', 'utf8'),
      fs.readFileSync('/proc/self/cgroup', 'utf8'),
    );
  } catch (error) {
    return { kind: 'process-group', reason: `no /proc to find cgroups in (${message(error)})` };
  }
  const wanted = places.filter((p) => choice === 'auto' || `cgroup-${p.kind}` === choice);
  if (wanted.length === 0) return { kind: 'process-group', reason: 'no cgroup v2 or v1 freezer is mounted' };
  const failures: string[] = [];
  for (const place of wanted) {
    const base = path.join(place.dir, name);
    try {
      fs.mkdirSync(base, { recursive: true });
      fs.accessSync(path.join(base, freezerFiles(place.kind).control), fs.constants.W_OK);
      return { kind: place.kind, base };
    } catch (error) {
      failures.push(`cgroup ${place.kind} at ${place.dir}: ${message(error)}`);
    }
  }
  return { kind: 'process-group', reason: `no writable cgroup freezer (${failures.join('; ')})` };
}

/** A new cgroup for the worker (one left by an earlier run of the same id is reused). */
export function makeCgroup(found: { kind: CgroupKind; base: string }, workerId: string): WorkerCgroup {
  const dir = path.join(found.base, workerId);
  fs.mkdirSync(dir, { recursive: true });
  return { kind: found.kind, path: dir };
}

/** The file a process writes its pid to, to enter the cgroup. */
export function procsFile(cgroup: WorkerCgroup): string {
  return path.join(cgroup.path, 'cgroup.procs');
}

/** What the cgroup's freezer says now; undefined when its state cannot be read (the cgroup is gone). */
export function cgroupFreezerState(cgroup: WorkerCgroup): 'frozen' | 'thawed' | 'freezing' | undefined {
  try {
    const text = fs.readFileSync(path.join(cgroup.path, freezerFiles(cgroup.kind).state), 'utf8');
    return freezerStateOf(cgroup.kind, text);
  } catch {
    return undefined;
  }
}

/**
 * Freezes or thaws every process in the cgroup, and waits until the kernel says it is done. Throws past `waitMs`.
 * A cgroup-v1 freeze that reads FREEZING is asked again at each poll: v1 can stay FREEZING when a task was busy
 * (in the kernel, or forking) at the first request, and the freezer's documentation said then to retry or thaw
 * (runc's v1 freezer retries the same way); one that still does not freeze is thawed back, never left half frozen.
 */
export async function setFrozen(
  cgroup: WorkerCgroup,
  frozen: boolean,
  waitMs = FREEZE_WAIT_MS,
): Promise<void> {
  const control = path.join(cgroup.path, freezerFiles(cgroup.kind).control);
  const ask = (toFrozen: boolean) => {
    try {
      fs.writeFileSync(control, freezerCommand(cgroup.kind, toFrozen));
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'NOT_FOUND' : 'RUNTIME_ERROR';
      throw new RuntimeError(code, `cannot write ${control}: ${message(error)}`, { cause: error });
    }
  };
  ask(frozen);
  const target = frozen ? 'frozen' : 'thawed';
  const until = Date.now() + waitMs;
  for (;;) {
    const state = cgroupFreezerState(cgroup);
    if (state === target) return;
    if (state === undefined) throw new RuntimeError('NOT_FOUND', `cgroup ${cgroup.path} is gone`);
    if (Date.now() >= until) {
      const doing = frozen ? 'freeze' : 'thaw';
      if (frozen) ask(false);
      throw new RuntimeError('RUNTIME_ERROR', `cgroup ${cgroup.path} did not ${doing} within ${waitMs} ms`);
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    if (frozen && cgroup.kind === 'v1' && state === 'freezing') ask(true);
  }
}

/** Every process in the cgroup (empty when it is gone). */
export function cgroupPids(cgroup: WorkerCgroup): number[] {
  try {
    return fs
      .readFileSync(procsFile(cgroup), 'utf8')
      .split('\n')
      .map(Number)
      .filter((pid) => Number.isInteger(pid) && pid > 0);
  } catch {
    return [];
  }
}

/**
 * Every process in the cgroup and in the cgroups below it: a pod's processes sit in its containers' cgroups, none
 * in the pod's own (cgroup v2 allows processes only in leaves). Empty when it is gone.
 */
export function cgroupTreePids(cgroup: WorkerCgroup): number[] {
  const pids = cgroupPids(cgroup);
  let entries: fs.Dirent[] = [];
  try {
    entries = fs.readdirSync(cgroup.path, { withFileTypes: true });
  } catch {
    return pids;
  }
  for (const entry of entries) {
    if (entry.isDirectory())
      pids.push(...cgroupTreePids({ kind: cgroup.kind, path: path.join(cgroup.path, entry.name) }));
  }
  return pids;
}

/** Sends `signal` to every process in the cgroup; returns how many it reached. */
export function signalCgroup(cgroup: WorkerCgroup, signal: NodeJS.Signals): number {
  let sent = 0;
  for (const pid of cgroupPids(cgroup)) {
    try {
      process.kill(pid, signal);
      sent += 1;
    } catch {
      // Gone meanwhile.
    }
  }
  return sent;
}

/** Kills every process in the cgroup, frozen ones too (a frozen v1 task dies only once thawed). */
export function killCgroup(cgroup: WorkerCgroup): void {
  signalCgroup(cgroup, 'SIGKILL');
  if (cgroupFreezerState(cgroup) === 'thawed') return;
  try {
    fs.writeFileSync(
      path.join(cgroup.path, freezerFiles(cgroup.kind).control),
      freezerCommand(cgroup.kind, false),
    );
  } catch {
    // Gone meanwhile.
  }
}

/**
 * Removes the cgroup once its processes are gone (they are killed), then the runtime's directory above it where no
 * other worker's is left; a cgroup already gone is no failure.
 */
export async function removeCgroup(cgroup: WorkerCgroup): Promise<void> {
  const until = Date.now() + REMOVE_WAIT_MS;
  for (;;) {
    try {
      fs.rmdirSync(cgroup.path);
      try {
        // A create racing with this makes the directory again (makeCgroup's mkdir is recursive).
        fs.rmdirSync(path.dirname(cgroup.path));
      } catch {
        // Another worker's cgroup is in it.
      }
      return;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return;
      if (code !== 'EBUSY' || Date.now() >= until) {
        throw new RuntimeError('RUNTIME_ERROR', `cannot remove cgroup ${cgroup.path}: ${message(error)}`, {
          cause: error,
        });
      }
    }
    killCgroup(cgroup);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
