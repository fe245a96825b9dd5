/**
 * A `GpuCheckpointer` for unit tests that keeps the driver's state in memory and fails as the real one documents
 * (ports/gpu-checkpoint.ts, DESIGN.md section 7): a stopped process cannot be checkpointed (the call runs past its
 * deadline), a restore onto a GPU without the process's memory free fails, and a failed restore is final. The real
 * implementation reaches the CUDA driver through a helper process (src/gpu/checkpoint/, another branch).
 */
import type {
  GpuCheckpointAvailability,
  GpuCheckpointer,
  GpuProcess,
  GpuProcessState,
} from '../../src/ports/gpu-checkpoint.js';

interface HeldProcess extends GpuProcess {
  state: GpuProcessState;
}

export class MemoryCheckpointer implements GpuCheckpointer {
  readonly availability: GpuCheckpointAvailability;
  /** Every call made, in order: `suspend 10001`, `resume 10001`. */
  readonly calls: string[] = [];
  /** GPU uuid -> its memory in bytes. */
  readonly #capacity: Map<string, number>;
  readonly #processes = new Map<number, HeldProcess>();
  /** Whether a pid is stopped now (frozen): such a process cannot be checkpointed. */
  readonly #stopped: (pid: number) => boolean;
  /** GPU uuid -> bytes used by processes outside Corral's (another tenant's, a test's). */
  readonly #other = new Map<string, number>();

  constructor(options: {
    gpus: Record<string, number>;
    stopped?: (pid: number) => boolean;
    availability?: GpuCheckpointAvailability;
  }) {
    this.#capacity = new Map(Object.entries(options.gpus));
    this.#stopped = options.stopped ?? (() => false);
    this.availability = options.availability ?? { available: true, driverVersion: '580.00 (memory)' };
  }

  /** A process that holds `usedBytes` on a GPU. */
  addProcess(process: GpuProcess): void {
    this.#processes.set(process.pid, { ...process, state: 'running' });
  }

  /** Memory something else uses on a GPU (a restore needs its own memory free beside it). */
  useOther(gpuUuid: string, bytes: number): void {
    this.#other.set(gpuUuid, bytes);
  }

  /** Bytes in use on a GPU now: running processes' plus others'. */
  usedBytes(gpuUuid: string): number {
    let used = this.#other.get(gpuUuid) ?? 0;
    for (const p of this.#processes.values())
      if (p.gpuUuid === gpuUuid && p.state === 'running') used += p.usedBytes;
    return used;
  }

  async gpuProcesses(pids: readonly number[]): Promise<GpuProcess[]> {
    return pids.flatMap((pid) => {
      const p = this.#processes.get(pid);
      return p && p.state === 'running' ? [{ pid: p.pid, gpuUuid: p.gpuUuid, usedBytes: p.usedBytes }] : [];
    });
  }

  async suspend(pid: number, options: { deadlineMs: number }): Promise<void> {
    this.calls.push(`suspend ${pid}`);
    const p = this.#held(pid);
    if (this.#stopped(pid))
      throw new Error(
        `checkpoint of pid ${pid} did not answer within ${options.deadlineMs} ms (it is stopped)`,
      );
    if (p.state !== 'running') throw new Error(`pid ${pid} is ${p.state}, not running`);
    p.state = 'checkpointed';
  }

  async resume(pid: number, _options: { deadlineMs: number }): Promise<void> {
    this.calls.push(`resume ${pid}`);
    const p = this.#held(pid);
    if (p.state === 'failed')
      throw new Error(`restore of pid ${pid} failed before: CUDA_ERROR_OPERATING_SYSTEM`);
    if (p.state !== 'checkpointed') throw new Error(`pid ${pid} is ${p.state}, not checkpointed`);
    const free = (this.#capacity.get(p.gpuUuid) ?? 0) - this.usedBytes(p.gpuUuid);
    if (free < p.usedBytes) {
      p.state = 'failed';
      throw new Error(
        `restore of pid ${pid}: CUDA_ERROR_OUT_OF_MEMORY (${free} bytes free of ${p.usedBytes})`,
      );
    }
    p.state = 'running';
  }

  /** How many times `state` was asked (a frozen worker's adoption must not ask it: see `state`). */
  stateCalls = 0;

  async state(pid: number, options: { deadlineMs: number }): Promise<GpuProcessState> {
    this.stateCalls += 1;
    // Seen on the H200 (docs/workers.md): asked of a stopped process, checkpointed or not, the driver answers late
    // or never.
    if (this.#stopped(pid))
      throw new Error(`state of pid ${pid} did not answer within ${options.deadlineMs} ms (it is stopped)`);
    return this.#processes.get(pid)?.state ?? 'none';
  }

  #held(pid: number): HeldProcess {
    const p = this.#processes.get(pid);
    if (!p) throw new Error(`pid ${pid} holds no CUDA context`);
    return p;
  }
}
