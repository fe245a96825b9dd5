/**
 * The local runtime's state directory and what lies in it: `workers/<id>.json`, one state file per worker, which
 * lets a restarted LocalRuntime adopt the processes an earlier one started; `logs/<id>.log`, the worker's output;
 * `volumes/<id>/<n>`, its local volumes. `parseState` is pure; StateDir does the few file operations on that layout.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { WorkerCgroup } from '../cgroups/cgroup-freezer.js';
import { LABELS, type WorkerSpec } from '../types.js';
import type { LocalMount } from './worker-env.js';

export const STATE_VERSION = 1;
/** Worker ids name files here: no separators, no leading dot. */
export const WORKER_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,199}$/;

/** What one state file records. */
export interface LocalState {
  version: number;
  workerId: string;
  endpointId: string;
  revision: number;
  labels: Record<string, string>;
  port: number;
  pid: number;
  /** Field 22 of /proc/<pid>/stat, to tell our process from a recycled pid. */
  startTime?: string;
  createdAt: number;
  /** When the process was started, on the runtime's clock: where CPU use is measured from. */
  startedAt: number;
  gpuUuids: string[];
  /** The cgroup it runs in (cgroup-freezer.ts); absent where the host gave none: its process group is frozen. */
  cgroup?: WorkerCgroup;
  /** Suspended: the GPU memory its processes held, per GPU uuid, in bytes (what a restore needs free). */
  suspendedGpuBytes?: Record<string, number>;
  exitCode?: number;
  message?: string;
}

function cgroupOf(value: unknown): WorkerCgroup | undefined {
  const cgroup = value as Partial<WorkerCgroup> | null | undefined;
  if (!cgroup || (cgroup.kind !== 'v2' && cgroup.kind !== 'v1') || typeof cgroup.path !== 'string')
    return undefined;
  return path.isAbsolute(cgroup.path) ? { kind: cgroup.kind, path: cgroup.path } : undefined;
}

function bytesOf(value: unknown): Record<string, number> | undefined {
  if (!value || typeof value !== 'object') return undefined;
  const entries = Object.entries(value).filter(
    (entry): entry is [string, number] =>
      typeof entry[1] === 'number' && Number.isFinite(entry[1]) && entry[1] >= 0,
  );
  return Object.fromEntries(entries);
}

/** A state file's text -> its state; undefined for anything this version did not write. `now` fills a missing start. */
export function parseState(text: string, now: number): LocalState | undefined {
  let value: Partial<LocalState> | null;
  try {
    value = JSON.parse(text) as Partial<LocalState> | null;
  } catch {
    return undefined;
  }
  if (
    !value ||
    value.version !== STATE_VERSION ||
    typeof value.workerId !== 'string' ||
    !WORKER_ID.test(value.workerId) ||
    typeof value.pid !== 'number' ||
    !Number.isInteger(value.pid) ||
    value.pid <= 0 ||
    typeof value.port !== 'number' ||
    typeof value.labels !== 'object' ||
    value.labels === null
  ) {
    return undefined;
  }
  return {
    version: STATE_VERSION,
    workerId: value.workerId,
    endpointId:
      typeof value.endpointId === 'string' ? value.endpointId : (value.labels[LABELS.endpoint] ?? ''),
    revision: typeof value.revision === 'number' ? value.revision : 0,
    labels: Object.fromEntries(Object.entries(value.labels).filter(([, v]) => typeof v === 'string')),
    port: value.port,
    pid: value.pid,
    ...(typeof value.startTime === 'string' ? { startTime: value.startTime } : {}),
    createdAt: typeof value.createdAt === 'number' ? value.createdAt : 0,
    startedAt: typeof value.startedAt === 'number' ? value.startedAt : now,
    gpuUuids: Array.isArray(value.gpuUuids) ? value.gpuUuids.filter((u) => typeof u === 'string') : [],
    ...optional('cgroup', cgroupOf(value.cgroup)),
    ...optional('suspendedGpuBytes', bytesOf(value.suspendedGpuBytes)),
    ...(typeof value.exitCode === 'number' ? { exitCode: value.exitCode } : {}),
    ...(typeof value.message === 'string' ? { message: value.message } : {}),
  };
}

function optional<K extends string, V>(key: K, value: V | undefined): Partial<Record<K, V>> {
  return value === undefined ? {} : ({ [key]: value } as Record<K, V>);
}

/** The state files found by StateDir.readStates: those that parse, and the names of those that do not. */
export interface ReadStates {
  states: LocalState[];
  unreadable: { file: string; error?: unknown }[];
}

export class StateDir {
  readonly root: string;

  constructor(root: string) {
    this.root = path.resolve(root);
  }

  logPath(workerId: string): string {
    return path.join(this.root, 'logs', `${workerId}.log`);
  }

  statePath(workerId: string): string {
    return path.join(this.root, 'workers', `${workerId}.json`);
  }

  /** Creates the directories state files and logs go to. */
  async ensure(): Promise<void> {
    await fsp.mkdir(path.join(this.root, 'workers'), { recursive: true });
    await fsp.mkdir(path.join(this.root, 'logs'), { recursive: true });
  }

  /** Every state file; throws when the directory itself cannot be used. */
  async readStates(now: number): Promise<ReadStates> {
    const dir = path.join(this.root, 'workers');
    await fsp.mkdir(dir, { recursive: true });
    const out: ReadStates = { states: [], unreadable: [] };
    for (const file of await fsp.readdir(dir)) {
      if (!file.endsWith('.json')) continue;
      let text: string;
      try {
        text = await fsp.readFile(path.join(dir, file), 'utf8');
      } catch (error) {
        out.unreadable.push({ file, error });
        continue;
      }
      const state = parseState(text, now);
      if (state) out.states.push(state);
      else out.unreadable.push({ file });
    }
    return out;
  }

  /** Written synchronously (tmp + rename) so that an exit and a remove cannot interleave their writes. Throws. */
  writeState(state: LocalState): void {
    const target = this.statePath(state.workerId);
    const tmp = `${target}.${process.pid}.tmp`;
    try {
      fs.writeFileSync(tmp, `${JSON.stringify(state)}\n`);
      fs.renameSync(tmp, target);
    } catch (error) {
      try {
        fs.rmSync(tmp, { force: true });
      } catch {
        // The write's own error is the one to report.
      }
      throw error;
    }
  }

  /** One directory per local volume (created), a network volume's host path as is. */
  async prepareVolumes(spec: WorkerSpec): Promise<LocalMount[]> {
    const mounts: LocalMount[] = [];
    for (const [n, volume] of spec.volumes.entries()) {
      if (volume.type === 'local') {
        const dir = path.join(this.#volumesOf(spec.workerId), String(n));
        await fsp.mkdir(dir, { recursive: true });
        mounts.push({ mountPath: volume.mountPath, dir });
      } else {
        mounts.push({ mountPath: volume.mountPath, dir: volume.hostPath });
      }
    }
    return mounts;
  }

  /** The worker's state file, log and local volumes; all are tried before the first failure is thrown. */
  async deleteWorker(workerId: string): Promise<void> {
    const results = await Promise.allSettled([
      fsp.rm(this.statePath(workerId), { force: true }),
      fsp.rm(this.logPath(workerId), { force: true }),
      fsp.rm(this.#volumesOf(workerId), { recursive: true, force: true }),
    ]);
    const failed = results.find((result) => result.status === 'rejected');
    if (failed) throw failed.reason;
  }

  #volumesOf(workerId: string): string {
    return path.join(this.root, 'volumes', workerId);
  }
}
