/**
 * Which GPUs are held and by whom, beyond what worker records say: a create under way holds its GPUs even if its
 * record goes meanwhile, and a container being removed holds them through the runtime's grace period, until the
 * runtime says it is gone. Placement never hands out a held GPU; GET products counts them as busy.
 */

interface Release {
  gpuUuids: string[];
  /** A removal is running now; false: it failed and a later pass retries it. */
  inFlight: boolean;
}

export class GpuLedger {
  /** Workers whose create is under way -> the GPUs they were given. */
  readonly #creating = new Map<string, string[]>();
  /** Containers being removed (or whose removal failed, to be retried) -> their GPUs. */
  readonly #releasing = new Map<string, Release>();

  createStarted(workerId: string, gpuUuids: readonly string[]): void {
    this.#creating.set(workerId, [...gpuUuids]);
  }

  createEnded(workerId: string): void {
    this.#creating.delete(workerId);
  }

  isCreating(workerId: string): boolean {
    return this.#creating.has(workerId);
  }

  /** The container's removal begins (or begins again): its GPUs stay held until `released`. */
  releaseStarted(workerId: string, gpuUuids: readonly string[]): void {
    this.#releasing.set(workerId, { gpuUuids: [...gpuUuids], inFlight: true });
  }

  /** The removal failed: the GPUs stay held, and `toRetry` names it to the next pass. */
  releaseFailed(workerId: string): void {
    const release = this.#releasing.get(workerId);
    if (release) release.inFlight = false;
  }

  released(workerId: string): void {
    this.#releasing.delete(workerId);
  }

  isReleasing(workerId: string): boolean {
    return this.#releasing.has(workerId);
  }

  /** Removals that failed, with their GPUs: to retry while the container is listed, to forget once it is not. */
  toRetry(): [workerId: string, gpuUuids: string[]][] {
    const failed: [string, string[]][] = [];
    for (const [workerId, release] of this.#releasing) {
      if (!release.inFlight) failed.push([workerId, release.gpuUuids]);
    }
    return failed;
  }

  /** GPU uuid -> the worker holding it: the workers' own GPUs, then creates under way, then removals. */
  held(workers: Iterable<{ id: string; gpuUuids: readonly string[] }>): Map<string, string> {
    const held = new Map<string, string>();
    for (const w of workers) for (const uuid of w.gpuUuids) held.set(uuid, w.id);
    for (const [workerId, gpuUuids] of this.#creating) for (const uuid of gpuUuids) held.set(uuid, workerId);
    for (const [workerId, { gpuUuids }] of this.#releasing) {
      for (const uuid of gpuUuids) held.set(uuid, workerId);
    }
    return held;
  }
}
