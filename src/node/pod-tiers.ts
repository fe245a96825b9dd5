/**
 * What the node agent does to a pod, by its UID: freeze and thaw its cgroup (the shared cgroup freezer, which waits
 * until the kernel says every process is stopped or running), and, where the node has a GPU checkpointer, suspend and
 * restore its GPU processes in the driver's order (CheckpointSteps, as the Docker and local runtimes do). It keeps
 * the pods it moved into a tier, for its status; a pod's own state is read from its cgroup each time.
 */
import type { Logger } from 'pino';
import { NodeAgentError } from '../errors/node-agent-catalogue.js';
import type { Clock } from '../ports/clock.js';
import type { GpuCheckpointer } from '../ports/gpu-checkpoint.js';
import {
  cgroupFreezerState,
  cgroupTreePids,
  setFrozen,
  type WorkerCgroup,
} from '../runtime/cgroups/cgroup-freezer.js';
import { CheckpointSteps } from '../runtime/idle-tiers.js';
import type { HeldPod, PodTierState } from '../runtime/kubernetes/node-agent-protocol.js';
import { RuntimeError } from '../runtime/types.js';
import { findPodCgroup, type PodHierarchy } from './pod-cgroups.js';

export interface PodTiersOptions {
  hierarchy: PodHierarchy;
  checkpointer?: GpuCheckpointer | undefined;
  clock: Clock;
  logger: Logger;
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export class PodTiers extends CheckpointSteps {
  readonly #o: PodTiersOptions;
  readonly #held = new Map<string, HeldPod>();

  constructor(options: PodTiersOptions) {
    super(options.checkpointer);
    this.#o = options;
  }

  /** The cgroup hierarchy its pods are frozen in. */
  get hierarchyKind(): PodHierarchy['kind'] {
    return this.#o.hierarchy.kind;
  }

  /** The pods this agent moved into a tier and that are there still. */
  held(): HeldPod[] {
    return [...this.#held.values()];
  }

  state(uid: string): PodTierState {
    const cgroup = this.#cgroup(uid);
    const frozen = cgroupFreezerState(cgroup) === 'frozen';
    if (!frozen) this.#held.delete(uid);
    const held = this.#held.get(uid)?.tier;
    return {
      uid,
      tier: frozen ? (held ?? 'frozen') : 'running',
      processes: cgroupTreePids(cgroup).length,
    };
  }

  async freeze(uid: string): Promise<PodTierState> {
    await this.#setFrozen(this.#cgroup(uid), true);
    if (this.#held.get(uid)?.tier !== 'suspended') this.#hold(uid, 'frozen');
    return this.state(uid);
  }

  async thaw(uid: string): Promise<PodTierState> {
    await this.#setFrozen(this.#cgroup(uid), false);
    this.#held.delete(uid);
    return this.state(uid);
  }

  async suspend(uid: string, deadlineMs: number): Promise<PodTierState> {
    if (!this.suspendable.available)
      throw new NodeAgentError('NODE_AGENT_SUSPEND_UNAVAILABLE', this.suspendable.reason);
    const { gpuBytes } = await this.#checkpoint(() => this.suspendWorker(this.#pod(uid), deadlineMs));
    this.#hold(uid, 'suspended');
    return { ...this.state(uid), gpuBytes };
  }

  async restore(uid: string, deadlineMs: number): Promise<PodTierState> {
    if (!this.suspendable.available)
      throw new NodeAgentError('NODE_AGENT_SUSPEND_UNAVAILABLE', this.suspendable.reason);
    await this.#checkpoint(() => this.restoreWorker(this.#pod(uid), deadlineMs));
    this.#held.delete(uid);
    return this.state(uid);
  }

  #hold(uid: string, tier: HeldPod['tier']): void {
    this.#held.set(uid, { uid, tier, since: this.#o.clock() });
  }

  #pod(uid: string) {
    const cgroup = this.#cgroup(uid);
    return {
      thaw: () => this.#setFrozen(cgroup, false),
      freeze: () => this.#setFrozen(cgroup, true),
      pids: async () => cgroupTreePids(cgroup),
    };
  }

  #cgroup(uid: string): WorkerCgroup {
    const cgroup = findPodCgroup(this.#o.hierarchy, uid);
    if (!cgroup) {
      this.#held.delete(uid);
      throw new NodeAgentError(
        'NODE_AGENT_POD_NOT_FOUND',
        `no cgroup of pod ${uid} under ${this.#o.hierarchy.root} (cgroup ${this.#o.hierarchy.kind})`,
      );
    }
    return cgroup;
  }

  async #setFrozen(cgroup: WorkerCgroup, frozen: boolean): Promise<void> {
    try {
      await setFrozen(cgroup, frozen);
    } catch (error) {
      const gone = error instanceof RuntimeError && error.code === 'NOT_FOUND';
      throw new NodeAgentError(
        gone ? 'NODE_AGENT_POD_NOT_FOUND' : 'NODE_AGENT_FREEZER_FAILED',
        message(error),
        { cause: error },
      );
    }
  }

  /** A checkpoint step's failure, other than the freezer's own, named as the checkpoint's. */
  async #checkpoint<T>(step: () => Promise<T>): Promise<T> {
    try {
      return await step();
    } catch (error) {
      if (error instanceof NodeAgentError) throw error;
      this.#o.logger.warn({ err: error }, 'GPU checkpoint step failed');
      throw new NodeAgentError('NODE_AGENT_CHECKPOINT_FAILED', message(error), { cause: error });
    }
  }
}
