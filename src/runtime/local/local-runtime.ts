/**
 * The `local` runtime: a DEVELOPMENT runtime for machines without Docker. Each worker is a child process on this
 * host, not a container: there is no isolation, no image (the endpoint's `image.command` is run as is, with the
 * host's PATH), no memory or disk limit (spec.memoryBytes and rootfsSizeGB are not enforced: an address-space rlimit
 * would break runtimes that reserve large virtual ranges, CUDA among them), and GPUs are only assigned through
 * CUDA_VISIBLE_DEVICES / NVIDIA_VISIBLE_DEVICES. Do not use it to run code you do not trust.
 *
 * - `PORT` is replaced by a free host port chosen here; the worker is reached at 127.0.0.1:<that port>.
 * - The environment is Corral's own minus anything Corral-specific (worker-env.ts), plus the spec's envs.
 * - Volumes cannot be mounted at arbitrary paths without containers: each volume is a directory (local volumes under
 *   the state directory, removed with the worker; network volumes their host path) named by the env var
 *   `CORRAL_MOUNT_<MOUNT_PATH>` (e.g. /data/models -> CORRAL_MOUNT_DATA_MODELS). Sizes are not enforced.
 * - Restart safety: every worker has a state file (state-dir.ts). A new LocalRuntime on the same stateDir adopts
 *   the processes still alive, checking that the pid was not recycled (proc.ts), and polls their liveness.
 *   Processes are started detached, in their own process group, with their output going to a log file
 *   (process-control.ts), so they outlive a Corral restart. A worker whose state file cannot be written is stopped
 *   and its create fails: a restart could not find it. Two LocalRuntimes must not share a stateDir at once.
 * - Each worker runs in its own cgroup where the host has a writable one (cgroup-freezer.ts: v2, else the v1
 *   freezer), entered before its program runs; the cgroup freezes it (local-tiers.ts), and its removal kills every
 *   process in it and removes the cgroup. Its path is in the state file, so a restart adopts a frozen worker through
 *   it. Without one, the process group is all there is, and `idleTiers.freezerNote` says why.
 *
 * This file keeps the workers' records and the WorkerRuntime contract; the parts live beside it.
 */

import fsp from 'node:fs/promises';
import pino, { type Logger } from 'pino';
import { type Clock, systemClock } from '../../ports/clock.js';
import type { GpuCheckpointer } from '../../ports/gpu-checkpoint.js';
import { type FreezerChoice, procsFile, type WorkerCgroup } from '../cgroups/cgroup-freezer.js';
import type { IdleTier } from '../idle-tiers.js';
import {
  type LogOptions,
  RuntimeError,
  type RuntimeEvent,
  type RuntimeWorker,
  type WorkerRuntime,
  type WorkerSpec,
  type WorkerStats,
  workerLabels,
} from '../types.js';
import { LocalIdleTiers } from './local-tiers.js';
import { tailLines } from './log-tail.js';
import { cpuPercent, readProcStat, readRssBytes } from './proc.js';
import {
  childExitWatch,
  type ExitWatch,
  exitOf,
  freePort,
  KILL_WAIT_MS,
  processMatches,
  type StartedProcess,
  signalGroup,
  startProcess,
  stopGroup,
  waitForExit,
} from './process-control.js';
import { type LocalState, type ReadStates, STATE_VERSION, StateDir, WORKER_ID } from './state-dir.js';
import { WorkerCgroups } from './worker-cgroups.js';
import { localWorkerEnv } from './worker-env.js';
import { adoptedRecord, type LocalWorker, startedRecord, toRuntimeWorker } from './worker-record.js';

export interface LocalRuntimeOptions {
  /** Where state files, logs and local volumes live; created when missing. */
  stateDir: string;
  /** Why no worker may start (as root without --local-allow-root): every create fails with it. */
  refusal?: string;
  /** For createdAt and CPU rates. Default: the system clock. */
  clock?: Clock;
  /** Where failures the runtime survives are reported. Default: nowhere (tests). */
  logger?: Logger;
  /** Grace period of remove() when the caller gives none. Default 10 s. */
  graceSeconds?: number;
  /** How often adopted processes (not our children) are checked for liveness. Default 500 ms. */
  pollIntervalMs?: number;
  /** The environment workers inherit (before scrubbing). Default process.env. */
  baseEnv?: NodeJS.ProcessEnv;
  /** What suspends a worker's GPU state (the CUDA driver's checkpoint API); none: no suspended tier. */
  checkpointer?: GpuCheckpointer | undefined;
  /** Which freezer new workers get (cgroup-freezer.ts); default `auto`: cgroup v2, else v1, else the process group. */
  freezer?: FreezerChoice;
}

export class LocalRuntime implements WorkerRuntime {
  readonly name = 'local' as const;

  readonly #dir: StateDir;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #graceSeconds: number;
  readonly #pollIntervalMs: number;
  readonly #baseEnv: NodeJS.ProcessEnv;
  readonly #refusal: string | undefined;
  readonly #workers = new Map<string, LocalWorker>();
  readonly #listeners = new Set<(event: RuntimeEvent) => void>();
  readonly #reservedPorts = new Set<number>();
  /** Worker ids whose create is under way (so that two concurrent creates of one id cannot both start). */
  readonly #creating = new Set<string>();
  #loaded: Promise<void> | undefined;
  #poller: NodeJS.Timeout | undefined;
  #closed = false;
  readonly #cgroups: WorkerCgroups;
  readonly idleTiers: LocalIdleTiers;

  constructor(options: LocalRuntimeOptions) {
    this.#dir = new StateDir(options.stateDir);
    this.#clock = options.clock ?? systemClock;
    this.#log = (options.logger ?? pino({ level: 'silent' })).child({ runtime: 'local' });
    this.#graceSeconds = options.graceSeconds ?? 10;
    this.#pollIntervalMs = options.pollIntervalMs ?? 500;
    this.#baseEnv = options.baseEnv ?? process.env;
    this.#refusal = options.refusal;
    this.#cgroups = new WorkerCgroups({
      choice: options.freezer ?? 'auto',
      stateRoot: this.#dir.root,
      logger: this.#log,
    });
    this.idleTiers = new LocalIdleTiers({
      checkpointer: options.checkpointer,
      targetOf: (workerId) => {
        const record = this.#workers.get(workerId);
        if (!record || record.exited || record.removing) return undefined;
        return { pid: record.state.pid, cgroup: record.state.cgroup };
      },
      setTier: (workerId, tier, suspended) => this.#setTier(workerId, tier, suspended?.gpuBytes),
      freezerNote: () => this.#cgroups.note(),
    });
  }

  /** The tier on the record, and a suspended worker's GPU memory on its state file too (a restart reads it back). */
  #setTier(workerId: string, tier: IdleTier | undefined, gpuBytes?: Record<string, number>): void {
    const record = this.#workers.get(workerId);
    if (!record) return;
    if (tier) record.tier = tier;
    else delete record.tier;
    const had = record.state.suspendedGpuBytes !== undefined;
    if (tier === 'suspended' && gpuBytes) record.state.suspendedGpuBytes = { ...gpuBytes };
    else if (tier === undefined) delete record.state.suspendedGpuBytes;
    if (had || record.state.suspendedGpuBytes !== undefined)
      this.#saveState(record, 'cannot record a suspended worker in its state file');
  }

  async create(spec: WorkerSpec): Promise<RuntimeWorker> {
    await this.#ensureLoaded();
    if (this.#closed) throw new RuntimeError('UNAVAILABLE', 'the local runtime is closed');
    if (this.#refusal !== undefined) throw new RuntimeError('RUNTIME_ERROR', this.#refusal);
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
    if (this.#workers.has(spec.workerId) || this.#creating.has(spec.workerId)) {
      throw new RuntimeError('RUNTIME_ERROR', `worker ${spec.workerId} already exists`);
    }
    this.#creating.add(spec.workerId);
    try {
      return await this.#spawnWorker(spec, program, args);
    } finally {
      this.#creating.delete(spec.workerId);
    }
  }

  /** No images here: a worker runs `image.command` as is, so there is nothing to make present. */
  async prepareImage(): Promise<void> {}

  async remove(workerId: string, options?: { graceSeconds?: number }): Promise<void> {
    await this.#ensureLoaded();
    const record = this.#workers.get(workerId);
    if (!record) {
      if (WORKER_ID.test(workerId)) await this.#dir.deleteWorker(workerId);
      return;
    }
    record.removing ??= this.#doRemove(record, options?.graceSeconds ?? this.#graceSeconds);
    return record.removing;
  }

  async list(selector: Record<string, string>): Promise<RuntimeWorker[]> {
    await this.#ensureLoaded();
    const entries = Object.entries(selector);
    const out: RuntimeWorker[] = [];
    for (const record of this.#workers.values()) {
      if (record.removing) continue;
      if (entries.every(([key, value]) => record.state.labels[key] === value))
        out.push(toRuntimeWorker(record));
    }
    return out;
  }

  async inspect(workerId: string): Promise<RuntimeWorker | undefined> {
    await this.#ensureLoaded();
    const record = this.#workers.get(workerId);
    return record && !record.removing ? toRuntimeWorker(record) : undefined;
  }

  async *logs(workerId: string, options: LogOptions): AsyncIterable<string> {
    await this.#ensureLoaded();
    const record = this.#workers.get(workerId);
    if (!record || record.removing) throw new RuntimeError('NOT_FOUND', `no worker ${workerId}`);
    const file = this.#dir.logPath(workerId);
    const handle = await fsp.open(file, 'r').catch((error: unknown) => {
      throw new RuntimeError('NOT_FOUND', `no log for worker ${workerId}`, { cause: error });
    });
    // An open handle reads the whole file on, even once a removal has deleted it.
    options.onOpen?.();
    try {
      yield* tailLines(handle, file, {
        tail: options.tail,
        follow: options.follow,
        signal: options.signal,
        ended: () => record.exited || record.removing !== undefined || this.#workers.get(workerId) !== record,
      });
    } finally {
      await handle.close();
    }
  }

  async stats(workerId: string): Promise<WorkerStats | undefined> {
    await this.#ensureLoaded();
    const record = this.#workers.get(workerId);
    if (!record || record.exited || record.removing) return undefined;
    const stat = readProcStat(record.state.pid);
    const memoryBytes = readRssBytes(record.state.pid);
    if (!stat || memoryBytes === undefined) return undefined;
    const sample = { ticks: stat.cpuTicks, at: this.#clock() };
    const previous = record.cpuSample ?? { ticks: 0, at: record.state.startedAt };
    record.cpuSample = sample;
    return { cpuPercent: cpuPercent(previous, sample), memoryBytes };
  }

  watch(onEvent: (event: RuntimeEvent) => void): () => void {
    this.#listeners.add(onEvent);
    // Adopted workers are only watched once loaded; a failure here fails every later call as well.
    this.#ensureLoaded().catch((error: unknown) => {
      this.#log.error({ err: error, stateDir: this.#dir.root }, 'cannot load the local runtime state');
    });
    return () => {
      this.#listeners.delete(onEvent);
    };
  }

  /** Stops watching; the worker processes keep running (a later LocalRuntime on the same stateDir adopts them). */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#poller) clearInterval(this.#poller);
    this.#poller = undefined;
    this.#listeners.clear();
  }

  // ---- creating ----

  async #spawnWorker(spec: WorkerSpec, program: string, args: string[]): Promise<RuntimeWorker> {
    const { workerId } = spec;
    const port = await freePort(this.#reservedPorts);
    this.#reservedPorts.add(port);
    let cgroup: WorkerCgroup | undefined;
    try {
      const mounts = await this.#dir.prepareVolumes(spec);
      await this.#dir.ensure();
      cgroup = this.#cgroups.make(workerId);
      const child = await startProcess({
        program,
        args,
        env: localWorkerEnv(spec, this.#baseEnv, port, mounts),
        logPath: this.#dir.logPath(workerId),
        onError: (error) => this.#log.warn({ workerId, err: error }, 'worker process error'),
        ...(cgroup ? { cgroupProcs: procsFile(cgroup) } : {}),
      });
      const now = this.#clock();
      const state: LocalState = {
        version: STATE_VERSION,
        workerId,
        endpointId: spec.endpointId,
        revision: spec.revision,
        labels: workerLabels(spec),
        port,
        pid: child.pid,
        startTime: readProcStat(child.pid)?.startTime,
        createdAt: now,
        startedAt: now,
        gpuUuids: spec.gpus.map((gpu) => gpu.uuid),
        ...(cgroup ? { cgroup } : {}),
      };
      try {
        this.#dir.writeState(state);
      } catch (error) {
        throw await this.#stopUnrecorded(state, child, error);
      }
      const record = startedRecord(state, child);
      this.#workers.set(workerId, record);
      child.once('exit', (code, signal) => this.#onChildExit(record, code, signal));
      this.#emit({ type: 'started', workerId });
      return toRuntimeWorker(record);
    } catch (error) {
      this.#reservedPorts.delete(port);
      await this.#cgroups.drop(workerId, cgroup);
      await this.#dir.deleteWorker(workerId).catch((cleanupError: unknown) => {
        this.#log.warn({ workerId, err: cleanupError }, 'cleanup after a failed create failed');
      });
      if (error instanceof RuntimeError) throw error;
      const message = `cannot start worker ${workerId}: ${errorMessage(error)}`;
      throw new RuntimeError('RUNTIME_ERROR', message, { cause: error });
    }
  }

  /**
   * A worker without a state file would run on unknown after a restart (nothing would adopt, stop or report it):
   * kill it and fail its create instead. Returns the error to throw.
   */
  async #stopUnrecorded(state: LocalState, child: StartedProcess, cause: unknown): Promise<RuntimeError> {
    const { workerId, pid } = state;
    this.#signal(pid, 'SIGKILL');
    if (!(await waitForExit(childExitWatch(child), KILL_WAIT_MS))) {
      this.#log.error({ workerId, pid }, 'worker process without a state file survived SIGKILL');
    }
    const message = `cannot write the state file of worker ${workerId}, so it was stopped: ${errorMessage(cause)}`;
    return new RuntimeError('RUNTIME_ERROR', message, { cause });
  }

  // ---- loading and watching ----

  #ensureLoaded(): Promise<void> {
    this.#loaded ??= this.#load();
    return this.#loaded;
  }

  /** Reads the state files left by an earlier run and adopts the processes that are still ours and alive. */
  async #load(): Promise<void> {
    let found: ReadStates;
    try {
      found = await this.#dir.readStates(this.#clock());
    } catch (error) {
      const message = `cannot use state directory ${this.#dir.root}: ${errorMessage(error)}`;
      throw new RuntimeError('UNAVAILABLE', message, { cause: error });
    }
    for (const { file, error } of found.unreadable) {
      // Its process, if any, runs on unwatched: say so, so that someone can stop it.
      this.#log.warn({ file, err: error }, 'skipping an unreadable local worker state file');
    }
    for (const state of found.states) {
      if (this.#workers.has(state.workerId)) continue;
      const record = adoptedRecord(state, state.exitCode === undefined && processMatches(state));
      this.#workers.set(record.state.workerId, record);
      // An exit seen only now is written back, so that the next run need not guess again.
      if (record.exited && state.exitCode === undefined) this.#saveExit(record);
      else if (!record.exited) {
        this.#reservedPorts.add(record.state.port);
        const { pid, cgroup, suspendedGpuBytes } = record.state;
        const tier = await this.idleTiers.tierOfAdopted({ pid, cgroup }, suspendedGpuBytes !== undefined);
        if (tier) record.tier = tier;
      }
    }
    this.#startPolling();
  }

  #startPolling(): void {
    if (this.#poller || this.#closed) return;
    const adopted = [...this.#workers.values()].some((r) => !r.child && !r.exited);
    if (!adopted) return;
    this.#poller = setInterval(() => this.#pollAdopted(), this.#pollIntervalMs);
    this.#poller.unref();
  }

  #pollAdopted(): void {
    let alive = 0;
    for (const record of this.#workers.values()) {
      if (record.child || record.exited) continue;
      if (processMatches(record.state)) {
        alive += 1;
        continue;
      }
      this.#markExited(
        record,
        -1,
        'the process ended (exit code unknown: it was started before Corral restarted)',
      );
    }
    if (alive === 0 && this.#poller) {
      clearInterval(this.#poller);
      this.#poller = undefined;
    }
  }

  #onChildExit(record: LocalWorker, code: number | null, signal: NodeJS.Signals | null): void {
    // The group outlives its leader only through stray children: kill them, as a container runtime would. The
    // pgid cannot have been reused yet, the group still holding it.
    this.#signal(record.state.pid, 'SIGKILL');
    this.#cgroups.killAll(record.state.cgroup);
    const { exitCode, message } = exitOf(code, signal);
    this.#markExited(record, exitCode, message);
  }

  #markExited(record: LocalWorker, exitCode: number, message: string): void {
    if (record.exited) return;
    record.exited = true;
    record.exitCode = exitCode;
    record.message = message;
    this.#reservedPorts.delete(record.state.port);
    for (const wake of [...record.exitWaiters]) wake();
    // A closed runtime leaves the state files to its successor.
    if (!this.#closed && !record.removing && this.#workers.get(record.state.workerId) === record) {
      record.state.exitCode = exitCode;
      record.state.message = message;
      this.#saveExit(record);
    }
    if (!this.#closed) this.#emit({ type: 'exited', workerId: record.state.workerId, exitCode });
  }

  /** The in-memory record stays right when this fails; a restart reports the exit code as unknown. */
  #saveExit(record: LocalWorker): void {
    this.#saveState(record, 'cannot record a worker exit in its state file');
  }

  #saveState(record: LocalWorker, failure: string): void {
    try {
      this.#dir.writeState(record.state);
    } catch (error) {
      this.#log.warn({ workerId: record.state.workerId, err: error }, failure);
    }
  }

  // ---- removing ----

  async #doRemove(record: LocalWorker, graceSeconds: number): Promise<void> {
    const { pid, workerId } = record.state;
    if (!record.exited && this.#isAlive(record)) {
      // A stopped (frozen) group would take SIGTERM only once continued: it is continued with it.
      const frozen = record.tier !== undefined;
      const { cgroup } = record.state;
      const signal = (s: NodeJS.Signals) => {
        this.#signal(pid, s);
        this.#cgroups.signal(cgroup, s);
        if (frozen && s === 'SIGTERM') this.#cgroups.thawForStop(pid, cgroup);
      };
      await stopGroup(signal, graceSeconds * 1000, this.#exitWatch(record));
    }
    if (!record.exited) this.#markExited(record, 137, 'killed on remove');
    await this.#cgroups.drop(workerId, record.state.cgroup);
    if (this.#workers.get(workerId) === record) this.#workers.delete(workerId);
    this.#reservedPorts.delete(record.state.port);
    await this.#dir.deleteWorker(workerId);
    if (!this.#closed) this.#emit({ type: 'removed', workerId });
  }

  #isAlive(record: LocalWorker): boolean {
    if (record.child) return record.child.exitCode === null && record.child.signalCode === null;
    return processMatches(record.state);
  }

  #exitWatch(record: LocalWorker): ExitWatch {
    return {
      exited: () => record.exited,
      look: () => {
        // Adopted processes are not our children: no exit event, so look.
        if (!record.exited && !record.child && !processMatches(record.state)) {
          this.#markExited(record, -1, 'exited on remove (exit code unknown)');
        }
      },
      onExit: (wake) => {
        record.exitWaiters.add(wake);
        return () => record.exitWaiters.delete(wake);
      },
    };
  }

  /** Signals the worker's process group; a group already gone is no failure, anything else is logged. */
  #signal(pid: number, signal: NodeJS.Signals): void {
    try {
      signalGroup(pid, signal);
    } catch (error) {
      this.#log.warn({ pid, signal, err: error }, 'cannot signal a worker process group');
    }
  }

  #emit(event: RuntimeEvent): void {
    for (const listener of [...this.#listeners]) {
      try {
        listener(event);
      } catch (error) {
        // A listener's failure is its own: the other listeners still hear of the event.
        this.#log.error({ err: error, event }, 'runtime event handler threw');
      }
    }
  }
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
