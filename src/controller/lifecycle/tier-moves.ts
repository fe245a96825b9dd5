/**
 * The moves of a worker into and out of the idle tiers (docs/workers.md, Idle tiers), each through the worker
 * lifecycle and its table, with the runtime call that makes it true: running -> frozen (out of routing at once, then
 * drained, then the runtime's freeze), frozen -> running (thaw: routed at once, it served before), frozen ->
 * suspended (its GPU state to host memory: its GPUs are free), suspended -> frozen -> running (restore onto its
 * GPUs, claimed first). A runtime call that fails stops the worker (a freeze or suspend) or kills it (a thaw or a
 * restore: a failed restore is final), with the reason. One call at a time per worker (`tierCall`).
 */
import type { Endpoint } from '../../domain/endpoint.js';
import type { WakeReport } from '../../ports/routing-view.js';
import type { IdleTiers } from '../../runtime/idle-tiers.js';
import { runtimeErrorFields } from '../runtime-outage.js';
import type { ManagedWorker } from '../workers/managed-worker.js';
import type { WorkerLifecycle, WorkerLifecycleOptions } from './worker-lifecycle.js';

type Shared = Pick<WorkerLifecycleOptions, 'logger' | 'clock' | 'poke' | 'awaitDrained' | 'endpoints'>;

export interface TierMovesOptions extends Shared {
  lifecycle: WorkerLifecycle;
  tiers: IdleTiers;
  prober: { schedule(workerId: string, delayMs: number): void };
  /** How long a suspend or a restore may take before it counts as failed; default 120 s. */
  checkpointDeadlineMs?: number;
}

const DEFAULT_CHECKPOINT_DEADLINE_MS = 120_000;

/** An instant as the messages show it: `2026-11-26T17:40:12Z`. */
export function instant(at: number): string {
  return `${new Date(at).toISOString().slice(0, 19)}Z`;
}

/**
 * A frozen worker's message: since when, and what comes next unless a request wakes it; and, where the runtime's
 * freezer is weaker than a cgroup's (`IdleTiers.freezerNote`), why.
 */
export function frozenMessage(
  since: number,
  endpoint: Endpoint | undefined,
  suspendable: boolean,
  freezerNote?: string,
): string {
  const note = freezerNote ? `; ${freezerNote}` : '';
  const w = endpoint?.spec.workers;
  if (!w) return `frozen since ${instant(since)}${note}`;
  const next = suspendable && w.keepSuspendedSeconds > 0 ? 'suspended' : 'stopped';
  return `frozen since ${instant(since)} (idle); ${next} at ${instant(since + w.keepFrozenSeconds * 1000)} unless a request wakes it${note}`;
}

/** A suspended worker's message: since when, why (GPU pressure: for whom), and when it is stopped. */
export function suspendedMessage(since: number, endpoint: Endpoint | undefined, forWhom?: string): string {
  const why = forWhom ? ` to free its GPUs for ${forWhom}` : '';
  const keep = endpoint?.spec.workers.keepSuspendedSeconds ?? 0;
  return `suspended since ${instant(since)}${why} (GPU state in host memory); stopped at ${instant(since + keep * 1000)} unless a request wakes it`;
}

function reasonOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export class TierMoves {
  readonly #o: TierMovesOptions;

  constructor(options: TierMovesOptions) {
    this.#o = options;
  }

  get suspendable(): boolean {
    return this.#o.tiers.suspendable.available;
  }

  /** An idle worker scaled down: out of routing now, frozen once its last requests have ended. */
  freeze(record: ManagedWorker): void {
    const { lifecycle, clock } = this.#o;
    const now = clock();
    const endpoint = this.#o.endpoints().get(record.endpointId);
    const message = frozenMessage(now, endpoint, this.suspendable, this.#o.tiers.freezerNote);
    if (!lifecycle.move(record, { state: 'frozen', message })) return;
    record.tierSince = now;
    record.tierCall = 'freeze';
    delete record.wake;
    void this.#run(record, 'freeze', async () => {
      await (this.#o.awaitDrained?.(record.endpointId, record.id) ?? Promise.resolve());
      await this.#o.tiers.freeze(record.id);
    });
  }

  /** A frozen worker serves again at once: routed, and probed at its usual period. */
  thaw(record: ManagedWorker): void {
    const started = this.#o.clock();
    record.tierCall = 'thaw';
    void this.#run(record, 'thaw', async () => {
      await this.#o.tiers.thaw(record.id);
      this.#serve(record, { tier: 'thaw', phases: [{ name: 'thaw', ms: this.#o.clock() - started }], at: 0 });
    });
  }

  /** A frozen worker past keepFrozen (or one a worker of another endpoint needs the GPUs of): its GPUs go free. */
  suspend(record: ManagedWorker, reason: string, forWhom?: string): void {
    record.tierCall = 'suspend';
    this.#o.lifecycle.move(record, {
      state: 'frozen',
      message: `suspending (${forWhom ? `its GPUs are needed by ${forWhom}` : reason}): moving its GPU state to host memory`,
    });
    void this.#run(record, 'suspend', async () => {
      const state = await this.#o.tiers.suspend(record.id, { deadlineMs: this.#deadline() });
      const now = this.#o.clock();
      record.suspendedOn = { gpuUuids: [...record.gpuUuids], gpuBytes: state.gpuBytes };
      record.gpuUuids = [];
      record.tierSince = now;
      const endpoint = this.#o.endpoints().get(record.endpointId);
      this.#o.lifecycle.move(record, {
        state: 'suspended',
        message: suspendedMessage(now, endpoint, forWhom),
      });
    });
  }

  /** A suspended worker whose GPUs (and their recorded memory) are free: they are its again, then it serves. */
  restore(record: ManagedWorker): void {
    const started = this.#o.clock();
    const on = record.suspendedOn;
    record.tierCall = 'restore';
    record.gpuUuids = on ? [...on.gpuUuids] : [];
    this.#o.lifecycle.move(record, { state: 'frozen', message: 'restoring its GPU state' });
    void this.#run(record, 'restore', async () => {
      await this.#o.tiers.restore(record.id, { deadlineMs: this.#deadline() });
      delete record.suspendedOn;
      this.#serve(record, {
        tier: 'restore',
        phases: [{ name: 'restore', ms: this.#o.clock() - started }],
        at: 0,
      });
    });
  }

  #serve(record: ManagedWorker, wake: WakeReport): void {
    const now = this.#o.clock();
    record.healthy = true;
    record.wake = { ...wake, at: now };
    delete record.tierSince;
    delete record.evictedFor;
    this.#o.lifecycle.move(record, { state: 'running', message: '' });
    const period = (this.#o.endpoints().get(record.endpointId)?.spec.health.periodSeconds ?? 0) * 1000;
    this.#o.prober.schedule(record.id, period);
    this.#o.lifecycle.log.note(record, `woken (${wake.tier})`, { tier: wake.tier, ms: wake.phases[0]?.ms });
  }

  #deadline(): number {
    return this.#o.checkpointDeadlineMs ?? DEFAULT_CHECKPOINT_DEADLINE_MS;
  }

  /** Runs one runtime call of the worker; a failure stops (freeze, suspend) or kills (thaw, restore) the worker. */
  async #run(record: ManagedWorker, call: NonNullable<ManagedWorker['tierCall']>, body: () => Promise<void>) {
    const { lifecycle, logger, clock } = this.#o;
    try {
      await body();
    } catch (error) {
      const reason = reasonOf(error);
      logger.warn({ ...runtimeErrorFields(error), workerId: record.id, call }, 'idle tier call failed');
      if (call === 'freeze' || call === 'suspend') {
        lifecycle.drainAndRemove(
          record,
          `could not be ${call === 'freeze' ? 'frozen' : 'suspended'}: ${reason}`,
        );
      } else {
        lifecycle.workerDied(
          record,
          `could not be ${call === 'thaw' ? 'thawed' : 'restored'}: ${reason}`,
          clock(),
        );
      }
    } finally {
      if (record.tierCall === call) delete record.tierCall;
      this.#o.poke();
    }
  }
}
