/**
 * The `local` runtime: a DEVELOPMENT runtime for machines without Docker. Each worker is a child process on this
 * host, not a container: there is no isolation, no image (the endpoint's `image.command` is run as is, with the
 * host's PATH), no memory or disk limit (spec.memoryBytes and rootfsSizeGB are not enforced: an address-space rlimit
 * would break runtimes that reserve large virtual ranges, CUDA among them), and GPUs are only assigned through
 * CUDA_VISIBLE_DEVICES / NVIDIA_VISIBLE_DEVICES. Do not use it to run code you do not trust.
 *
 * - `PORT` is replaced by a free host port chosen here; the worker is reached at 127.0.0.1:<that port>.
 * - The environment is Corral's own minus anything Corral-specific (CORRAL_* such as CORRAL_API_KEY,
 *   CORRAL_SECRET_KEY, CORRAL_DATABASE_URL), plus the spec's envs.
 * - Volumes cannot be mounted at arbitrary paths without containers: each volume is a directory (local volumes under
 *   `<stateDir>/volumes/<workerId>/<n>`, removed with the worker; network volumes their host path) named by the env
 *   var `CORRAL_MOUNT_<MOUNT_PATH>` (e.g. /data/models -> CORRAL_MOUNT_DATA_MODELS). Sizes are not enforced.
 * - Restart safety: every worker has a state file `<stateDir>/workers/<workerId>.json` (pid, its start time, labels,
 *   port, createdAt). A new LocalRuntime on the same stateDir adopts the processes still alive, checking that the
 *   pid was not recycled (same start time in /proc/<pid>/stat and CORRAL_WORKER_ID in /proc/<pid>/environ), and
 *   polls their liveness. Processes are started detached, in their own process group, with their output going to
 *   `<stateDir>/logs/<workerId>.log`, so they outlive a Corral restart. Two LocalRuntimes must not share a stateDir
 *   at the same time.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import {
  LABELS,
  type LogOptions,
  RuntimeError,
  type RuntimeEvent,
  type RuntimeWorker,
  type WorkerRuntime,
  type WorkerSpec,
  type WorkerStats,
  workerLabels,
} from '../types.js';

export interface LocalRuntimeOptions {
  /** Where state files, logs and local volumes live; created when missing. */
  stateDir: string;
  clock?: () => number;
  /** Grace period of remove() when the caller gives none. Default 10 s. */
  graceSeconds?: number;
  /** How often adopted processes (not our children) are checked for liveness. Default 500 ms. */
  pollIntervalMs?: number;
  /** The environment workers inherit (before scrubbing). Default process.env. */
  baseEnv?: NodeJS.ProcessEnv;
}

/** Inherited variables a worker must never see; every other CORRAL_* variable is dropped as well. */
export const SCRUBBED_ENV = ['CORRAL_API_KEY', 'CORRAL_SECRET_KEY', 'CORRAL_DATABASE_URL'] as const;

const STATE_VERSION = 1;
const WORKER_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,199}$/;
const LOG_POLL_MS = 250;
const KILL_WAIT_MS = 5_000;
/** Assumed USER_HZ (the kernel's clock ticks per second for /proc times); 100 on every common Linux. */
const CLOCK_TICKS = 100;

interface LocalState {
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
  /** Wall-clock ms when the process was started (createdAt follows the injected clock). */
  startedAt: number;
  gpuUuids: string[];
  exitCode?: number;
  message?: string;
}

interface LocalWorker {
  state: LocalState;
  /** Set when this instance spawned it; adopted processes are polled instead. */
  child?: ChildProcess;
  exited: boolean;
  exitCode?: number;
  message: string;
  removing?: Promise<void>;
  exitWaiters: Set<() => void>;
  cpuSample?: { ticks: number; at: number };
}

/** `/data/models` -> `CORRAL_MOUNT_DATA_MODELS`; `/` -> `CORRAL_MOUNT_ROOT`. */
export function mountEnvName(mountPath: string): string {
  const name = mountPath
    .toUpperCase()
    .replace(/[^A-Z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');
  return `CORRAL_MOUNT_${name || 'ROOT'}`;
}

/** The worker's environment (pure): inherited minus Corral's, plus the spec's, PORT, ids, GPUs and mounts. */
export function localWorkerEnv(
  spec: WorkerSpec,
  baseEnv: NodeJS.ProcessEnv,
  hostPort: number,
  mounts: { mountPath: string; dir: string }[],
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(baseEnv)) {
    if (value === undefined) continue;
    if (key.startsWith('CORRAL_') || (SCRUBBED_ENV as readonly string[]).includes(key)) continue;
    if (key === 'NVIDIA_VISIBLE_DEVICES' || key === 'CUDA_VISIBLE_DEVICES') continue;
    env[key] = value;
  }
  Object.assign(env, spec.env);
  env.PORT = String(hostPort);
  env.CORRAL_WORKER_ID = spec.workerId;
  env.CORRAL_ENDPOINT_ID = spec.endpointId;
  // UUIDs rather than indices: CUDA orders devices fastest-first by default, not as nvidia-smi numbers them.
  const uuids = spec.gpus.map((gpu) => gpu.uuid).join(',');
  env.NVIDIA_VISIBLE_DEVICES = uuids === '' ? 'void' : uuids;
  env.CUDA_VISIBLE_DEVICES = uuids;
  for (const mount of mounts) env[mountEnvName(mount.mountPath)] = mount.dir;
  return env;
}

export class LocalRuntime implements WorkerRuntime {
  readonly name = 'local' as const;

  private readonly stateDir: string;
  private readonly clock: () => number;
  private readonly graceSeconds: number;
  private readonly pollIntervalMs: number;
  private readonly baseEnv: NodeJS.ProcessEnv;
  private readonly workers = new Map<string, LocalWorker>();
  private readonly listeners = new Set<(event: RuntimeEvent) => void>();
  private readonly reservedPorts = new Set<number>();
  /** Worker ids whose create is under way (so that two concurrent creates of one id cannot both start). */
  private readonly creating = new Set<string>();
  private loaded: Promise<void> | undefined;
  private poller: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(options: LocalRuntimeOptions) {
    this.stateDir = path.resolve(options.stateDir);
    this.clock = options.clock ?? Date.now;
    this.graceSeconds = options.graceSeconds ?? 10;
    this.pollIntervalMs = options.pollIntervalMs ?? 500;
    this.baseEnv = options.baseEnv ?? process.env;
  }

  async create(spec: WorkerSpec): Promise<RuntimeWorker> {
    await this.ensureLoaded();
    if (this.closed) throw new RuntimeError('UNAVAILABLE', 'the local runtime is closed');
    if (!WORKER_ID.test(spec.workerId)) {
      throw new RuntimeError(
        'RUNTIME_ERROR',
        `worker id ${JSON.stringify(spec.workerId)} is not usable as a file name`,
      );
    }
    const [program, ...args] = spec.command;
    if (program === undefined || program === '') {
      throw new RuntimeError('RUNTIME_ERROR', 'the local runtime needs image.command');
    }
    if (this.workers.has(spec.workerId) || this.creating.has(spec.workerId)) {
      throw new RuntimeError('RUNTIME_ERROR', `worker ${spec.workerId} already exists`);
    }
    this.creating.add(spec.workerId);
    try {
      return await this.spawnWorker(spec, program, args);
    } finally {
      this.creating.delete(spec.workerId);
    }
  }

  private async spawnWorker(spec: WorkerSpec, program: string, args: string[]): Promise<RuntimeWorker> {
    const port = await this.freePort();
    this.reservedPorts.add(port);
    let logFd: number | undefined;
    try {
      const mounts = await this.prepareVolumes(spec);
      const env = localWorkerEnv(spec, this.baseEnv, port, mounts);
      await fsp.mkdir(this.dir('logs'), { recursive: true });
      await fsp.mkdir(this.dir('workers'), { recursive: true });
      logFd = fs.openSync(this.logPath(spec.workerId), 'w');
      const child = spawn(program, args, { env, detached: true, stdio: ['ignore', logFd, logFd] });
      fs.closeSync(logFd);
      logFd = undefined;
      const pid = child.pid;
      if (pid === undefined) {
        const error = await new Promise<Error>((resolve) => child.once('error', resolve));
        const message = `cannot start ${JSON.stringify(program)}: ${error.message}`;
        throw new RuntimeError('RUNTIME_ERROR', message, { cause: error });
      }
      child.on('error', () => {});
      child.unref();
      const state: LocalState = {
        version: STATE_VERSION,
        workerId: spec.workerId,
        endpointId: spec.endpointId,
        revision: spec.revision,
        labels: workerLabels(spec),
        port,
        pid,
        startTime: readProcStat(pid)?.startTime,
        createdAt: this.clock(),
        startedAt: Date.now(),
        gpuUuids: spec.gpus.map((gpu) => gpu.uuid),
      };
      const record: LocalWorker = { state, child, exited: false, message: 'running', exitWaiters: new Set() };
      this.workers.set(spec.workerId, record);
      child.once('exit', (code, signal) => this.onChildExit(record, code, signal));
      this.writeState(record);
      this.emit({ type: 'started', workerId: spec.workerId });
      return toRuntimeWorker(record);
    } catch (error) {
      if (logFd !== undefined) fs.closeSync(logFd);
      this.reservedPorts.delete(port);
      await this.deleteFiles(spec.workerId);
      if (error instanceof RuntimeError) throw error;
      const message = `cannot start worker ${spec.workerId}: ${errorMessage(error)}`;
      throw new RuntimeError('RUNTIME_ERROR', message, { cause: error });
    }
  }

  async remove(workerId: string, options?: { graceSeconds?: number }): Promise<void> {
    await this.ensureLoaded();
    const record = this.workers.get(workerId);
    if (!record) {
      if (WORKER_ID.test(workerId)) await this.deleteFiles(workerId);
      return;
    }
    record.removing ??= this.doRemove(record, options?.graceSeconds ?? this.graceSeconds);
    return record.removing;
  }

  async list(selector: Record<string, string>): Promise<RuntimeWorker[]> {
    await this.ensureLoaded();
    const entries = Object.entries(selector);
    const out: RuntimeWorker[] = [];
    for (const record of this.workers.values()) {
      if (record.removing) continue;
      if (entries.every(([key, value]) => record.state.labels[key] === value))
        out.push(toRuntimeWorker(record));
    }
    return out;
  }

  async inspect(workerId: string): Promise<RuntimeWorker | undefined> {
    await this.ensureLoaded();
    const record = this.workers.get(workerId);
    return record && !record.removing ? toRuntimeWorker(record) : undefined;
  }

  async *logs(workerId: string, options: LogOptions): AsyncIterable<string> {
    await this.ensureLoaded();
    const record = this.workers.get(workerId);
    if (!record || record.removing) throw new RuntimeError('NOT_FOUND', `no worker ${workerId}`);
    let handle: fsp.FileHandle;
    try {
      handle = await fsp.open(this.logPath(workerId), 'r');
    } catch (error) {
      throw new RuntimeError('NOT_FOUND', `no log for worker ${workerId}`, { cause: error });
    }
    try {
      const { size } = await handle.stat();
      let position = options.tail === undefined ? 0 : await tailOffset(handle, size, options.tail);
      let partial = '';
      for (;;) {
        // Whether the worker had ended before this read: then what is read now is all there will be.
        const ended = record.exited || record.removing !== undefined || this.workers.get(workerId) !== record;
        const chunk = await readFrom(handle, position);
        position += chunk.length;
        if (chunk.length > 0) {
          const text = partial + chunk.toString('utf8');
          const lines = text.split('\n');
          partial = lines.pop() ?? '';
          for (const line of lines) yield line.endsWith('\r') ? line.slice(0, -1) : line;
          continue;
        }
        if (!options.follow || ended || options.signal?.aborted) break;
        await waitForChange(this.logPath(workerId), LOG_POLL_MS, options.signal);
      }
      if (partial !== '') yield partial;
    } finally {
      await handle.close();
    }
  }

  async stats(workerId: string): Promise<WorkerStats | undefined> {
    await this.ensureLoaded();
    const record = this.workers.get(workerId);
    if (!record || record.exited || record.removing) return undefined;
    const stat = readProcStat(record.state.pid);
    const memoryBytes = readRssBytes(record.state.pid);
    if (!stat || memoryBytes === undefined) return undefined;
    const now = Date.now();
    const previous = record.cpuSample ?? { ticks: 0, at: record.state.startedAt };
    const elapsedSeconds = Math.max(0.001, (now - previous.at) / 1000);
    const cpuPercent = Math.max(0, ((stat.cpuTicks - previous.ticks) / CLOCK_TICKS / elapsedSeconds) * 100);
    record.cpuSample = { ticks: stat.cpuTicks, at: now };
    return { cpuPercent: Math.round(cpuPercent * 10) / 10, memoryBytes };
  }

  watch(onEvent: (event: RuntimeEvent) => void): () => void {
    this.listeners.add(onEvent);
    void this.ensureLoaded().catch(() => {});
    return () => {
      this.listeners.delete(onEvent);
    };
  }

  /** Stops watching; the worker processes keep running (a later LocalRuntime on the same stateDir adopts them). */
  async close(): Promise<void> {
    this.closed = true;
    if (this.poller) clearInterval(this.poller);
    this.poller = undefined;
    this.listeners.clear();
  }

  // ---- internals ----

  private dir(...parts: string[]): string {
    return path.join(this.stateDir, ...parts);
  }

  private logPath(workerId: string): string {
    return this.dir('logs', `${workerId}.log`);
  }

  private statePath(workerId: string): string {
    return this.dir('workers', `${workerId}.json`);
  }

  private ensureLoaded(): Promise<void> {
    this.loaded ??= this.load();
    return this.loaded;
  }

  /** Reads the state files left by an earlier run and adopts the processes that are still ours and alive. */
  private async load(): Promise<void> {
    let names: string[];
    try {
      await fsp.mkdir(this.dir('workers'), { recursive: true });
      names = await fsp.readdir(this.dir('workers'));
    } catch (error) {
      throw new RuntimeError(
        'UNAVAILABLE',
        `cannot use state directory ${this.stateDir}: ${errorMessage(error)}`,
        {
          cause: error,
        },
      );
    }
    for (const name of names) {
      if (!name.endsWith('.json')) continue;
      const state = parseState(await fsp.readFile(this.dir('workers', name), 'utf8').catch(() => ''));
      if (!state || this.workers.has(state.workerId)) continue;
      const record: LocalWorker = {
        state,
        exited: false,
        message: 'running (adopted)',
        exitWaiters: new Set(),
      };
      if (state.exitCode !== undefined) {
        record.exited = true;
        record.exitCode = state.exitCode;
        record.message = state.message ?? `exited with code ${state.exitCode}`;
      } else if (!processMatches(state)) {
        record.exited = true;
        record.exitCode = -1;
        record.message = 'the process ended while Corral was not watching (exit code unknown)';
        state.exitCode = -1;
        state.message = record.message;
      }
      this.workers.set(state.workerId, record);
      if (record.exited) this.writeState(record);
      else this.reservedPorts.add(state.port);
    }
    this.startPolling();
  }

  private startPolling(): void {
    if (this.poller || this.closed) return;
    const adopted = [...this.workers.values()].some((r) => !r.child && !r.exited);
    if (!adopted) return;
    this.poller = setInterval(() => this.pollAdopted(), this.pollIntervalMs);
    this.poller.unref();
  }

  private pollAdopted(): void {
    let alive = 0;
    for (const record of this.workers.values()) {
      if (record.child || record.exited) continue;
      if (processMatches(record.state)) {
        alive += 1;
        continue;
      }
      this.markExited(
        record,
        -1,
        'the process ended (exit code unknown: it was started before Corral restarted)',
      );
    }
    if (alive === 0 && this.poller) {
      clearInterval(this.poller);
      this.poller = undefined;
    }
  }

  private onChildExit(record: LocalWorker, code: number | null, signal: NodeJS.Signals | null): void {
    // The group outlives its leader only through stray children: kill them, as a container runtime would. The
    // pgid cannot have been reused yet, the group still holding it.
    killGroup(record.state.pid, 'SIGKILL');
    const exitCode = code ?? 128 + (signal ? (os.constants.signals[signal] ?? 0) : 0);
    const message = code !== null ? `exited with code ${code}` : `killed by ${signal ?? 'a signal'}`;
    this.markExited(record, exitCode, message);
  }

  private markExited(record: LocalWorker, exitCode: number, message: string): void {
    if (record.exited) return;
    record.exited = true;
    record.exitCode = exitCode;
    record.message = message;
    this.reservedPorts.delete(record.state.port);
    for (const wake of [...record.exitWaiters]) wake();
    // A closed runtime leaves the state files to its successor.
    if (!this.closed && !record.removing && this.workers.get(record.state.workerId) === record) {
      record.state.exitCode = exitCode;
      record.state.message = message;
      this.writeState(record);
    }
    if (!this.closed) this.emit({ type: 'exited', workerId: record.state.workerId, exitCode });
  }

  private async doRemove(record: LocalWorker, graceSeconds: number): Promise<void> {
    const { pid, workerId } = record.state;
    if (!record.exited && this.isAlive(record)) {
      killGroup(pid, 'SIGTERM');
      if (!(await this.waitForExit(record, graceSeconds * 1000))) {
        killGroup(pid, 'SIGKILL');
        await this.waitForExit(record, KILL_WAIT_MS);
      }
      // Children that ignored SIGTERM after their leader went.
      killGroup(pid, 'SIGKILL');
    }
    if (!record.exited) this.markExited(record, 137, 'killed on remove');
    if (this.workers.get(workerId) === record) this.workers.delete(workerId);
    this.reservedPorts.delete(record.state.port);
    await this.deleteFiles(workerId);
    if (!this.closed) this.emit({ type: 'removed', workerId });
  }

  private isAlive(record: LocalWorker): boolean {
    if (record.child) return record.child.exitCode === null && record.child.signalCode === null;
    return processMatches(record.state);
  }

  /** Resolves true once the process has exited, false after `ms`. */
  private waitForExit(record: LocalWorker, ms: number): Promise<boolean> {
    const check = () => {
      // Adopted processes are not our children: no exit event, so look.
      if (!record.exited && !record.child && !processMatches(record.state)) {
        this.markExited(record, -1, 'exited on remove (exit code unknown)');
      }
    };
    check();
    if (record.exited) return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = (value: boolean) => {
        clearTimeout(timer);
        clearInterval(poll);
        record.exitWaiters.delete(wake);
        resolve(value);
      };
      const wake = () => done(true);
      record.exitWaiters.add(wake);
      const timer = setTimeout(() => done(false), ms);
      const poll = setInterval(check, 50);
    });
  }

  private async prepareVolumes(spec: WorkerSpec): Promise<{ mountPath: string; dir: string }[]> {
    const mounts: { mountPath: string; dir: string }[] = [];
    for (const [n, volume] of spec.volumes.entries()) {
      if (volume.type === 'local') {
        const dir = this.dir('volumes', spec.workerId, String(n));
        await fsp.mkdir(dir, { recursive: true });
        mounts.push({ mountPath: volume.mountPath, dir });
      } else {
        mounts.push({ mountPath: volume.mountPath, dir: volume.hostPath });
      }
    }
    return mounts;
  }

  private async deleteFiles(workerId: string): Promise<void> {
    await Promise.all([
      fsp.rm(this.statePath(workerId), { force: true }),
      fsp.rm(this.logPath(workerId), { force: true }),
      fsp.rm(this.dir('volumes', workerId), { recursive: true, force: true }),
    ]);
  }

  /** Written synchronously (tmp + rename) so that an exit and a remove cannot interleave their writes. */
  private writeState(record: LocalWorker): void {
    const target = this.statePath(record.state.workerId);
    const tmp = `${target}.${process.pid}.tmp`;
    try {
      fs.writeFileSync(tmp, `${JSON.stringify(record.state)}\n`);
      fs.renameSync(tmp, target);
    } catch {
      // Best effort: the in-memory record stays right; only a restart would miss this change.
    }
  }

  /** A port free on every interface at the time of asking (bind 0, read, close), not one given to a live worker. */
  private async freePort(): Promise<number> {
    for (let attempt = 0; attempt < 20; attempt++) {
      const port = await new Promise<number>((resolve, reject) => {
        const server = net.createServer();
        server.unref();
        server.once('error', reject);
        server.listen(0, () => {
          const address = server.address();
          const value = typeof address === 'object' && address ? address.port : 0;
          server.close(() => resolve(value));
        });
      }).catch((error: unknown) => {
        throw new RuntimeError('RUNTIME_ERROR', `cannot find a free port: ${errorMessage(error)}`, {
          cause: error,
        });
      });
      if (port > 0 && !this.reservedPorts.has(port)) return port;
    }
    throw new RuntimeError('RUNTIME_ERROR', 'cannot find a free port');
  }

  private emit(event: RuntimeEvent): void {
    for (const listener of [...this.listeners]) {
      try {
        listener(event);
      } catch {
        // A listener's failure is its own.
      }
    }
  }
}

function toRuntimeWorker(record: LocalWorker): RuntimeWorker {
  const { state } = record;
  return {
    workerId: state.workerId,
    endpointId: state.endpointId,
    revision: state.revision,
    labels: { ...state.labels },
    phase: record.exited ? 'exited' : 'running',
    address: { host: '127.0.0.1', port: state.port },
    ...(record.exitCode !== undefined ? { exitCode: record.exitCode } : {}),
    message: record.message,
    createdAt: state.createdAt,
    gpuUuids: [...state.gpuUuids],
  };
}

function parseState(text: string): LocalState | undefined {
  try {
    const value = JSON.parse(text) as Partial<LocalState> | null;
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
      startedAt: typeof value.startedAt === 'number' ? value.startedAt : Date.now(),
      gpuUuids: Array.isArray(value.gpuUuids) ? value.gpuUuids.filter((u) => typeof u === 'string') : [],
      ...(typeof value.exitCode === 'number' ? { exitCode: value.exitCode } : {}),
      ...(typeof value.message === 'string' ? { message: value.message } : {}),
    };
  } catch {
    return undefined;
  }
}

interface ProcStat {
  state: string;
  startTime: string;
  cpuTicks: number;
}

/** Fields of /proc/<pid>/stat; undefined where there is no /proc or no such process. */
function readProcStat(pid: number): ProcStat | undefined {
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // comm (field 2) may hold spaces and parentheses: fields from 3 on follow the last ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const state = fields[0];
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  const startTime = fields[19];
  if (state === undefined || startTime === undefined) return undefined;
  return { state, startTime, cpuTicks: utime + stime };
}

function readRssBytes(pid: number): number | undefined {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = /^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1];
    return kb === undefined ? 0 : Number(kb) * 1024;
  } catch {
    return undefined;
  }
}

/** The pid is alive and is the process we started (not a recycled pid), as far as this OS lets us tell. */
function processMatches(state: LocalState): boolean {
  try {
    process.kill(state.pid, 0);
  } catch {
    return false; // ESRCH: gone; EPERM: someone else's process.
  }
  const stat = readProcStat(state.pid);
  if (!stat) return !fs.existsSync('/proc/self/stat'); // no /proc (not Linux): liveness is all we can check
  if (stat.state === 'Z' || stat.state === 'X') return false;
  if (state.startTime !== undefined && stat.startTime !== state.startTime) return false;
  try {
    const environ = fs.readFileSync(`/proc/${state.pid}/environ`, 'utf8');
    if (environ !== '' && !environ.split('\0').includes(`CORRAL_WORKER_ID=${state.workerId}`)) return false;
  } catch {
    // Unreadable environ (hardened /proc): the start time has to do.
  }
  return true;
}

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // ESRCH: the group is gone already.
  }
}

async function readFrom(handle: fsp.FileHandle, position: number): Promise<Buffer> {
  const { size } = await handle.stat();
  if (size <= position) return Buffer.alloc(0);
  const buffer = Buffer.alloc(Math.min(size - position, 1024 * 1024));
  const { bytesRead } = await handle.read(buffer, 0, buffer.length, position);
  return buffer.subarray(0, bytesRead);
}

/** Byte offset where the last `lines` lines of the file start. */
async function tailOffset(handle: fsp.FileHandle, size: number, lines: number): Promise<number> {
  if (lines <= 0) return size;
  const chunkSize = 64 * 1024;
  let count = 0;
  let end = size;
  while (end > 0) {
    const start = Math.max(0, end - chunkSize);
    const buffer = Buffer.alloc(end - start);
    await handle.read(buffer, 0, buffer.length, start);
    for (let i = buffer.length - 1; i >= 0; i--) {
      if (buffer[i] !== 0x0a || start + i === size - 1) continue; // a final newline ends the last line
      count += 1;
      if (count === lines) return start + i + 1;
    }
    end = start;
  }
  return 0;
}

/** Resolves when the file changes, after `ms`, or on abort, whichever comes first. */
function waitForChange(file: string, ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    let watcher: fs.FSWatcher | undefined;
    const done = () => {
      clearTimeout(timer);
      watcher?.close();
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
    try {
      watcher = fs.watch(file, { persistent: false }, done);
      watcher.on('error', done);
    } catch {
      // The timer will do.
    }
  });
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
