/**
 * The Kubernetes runtime's idle tiers, through the node agent (`corral node`, the `corral-node` DaemonSet) on each
 * worker pod's node: a freeze, a thaw, a suspend or a restore is a call to the agent at the pod's host IP and the
 * configured port, naming the pod by its UID, with the shared token. The pod is never deleted for it, so it keeps
 * its `nvidia.com/gpu` and the cluster's GPU count stays true. Where no agent answers on the pod's node, the call
 * fails UNAVAILABLE and the controller removes the worker as it did without tiers (tier-moves.ts): deletion is the
 * fallback. A suspended pod keeps its `nvidia.com/gpu` too (the device plugin's allocation is the pod's until it is
 * deleted), so suspending frees GPU memory but no GPU the scheduler could give another pod: it is off unless the
 * operator turns it on (`kubernetes.nodeAgent.suspend`).
 */
import type { Logger } from 'pino';
import type { IdleTier, IdleTiers, SuspendedState, TierSupport } from '../idle-tiers.js';
import { RuntimeError } from '../types.js';
import {
  agentBase,
  bearer,
  NODE_AGENT_PATHS,
  type PodTierMove,
  type PodTierState,
} from './node-agent-protocol.js';
import type { Pod } from './objects.js';

export interface NodeAgentSettings {
  /** The port every node's agent listens on at the node's IP. */
  port: number;
  /** The shared token (the Secret the agent mounts too); never logged. */
  token: string;
  /** Whether to suspend frozen pods' GPU state through the agents (they keep their nvidia.com/gpu); default off. */
  suspend?: boolean;
  /** How long a freeze or a thaw may take, the agent's answer included; default 10 s. */
  callTimeoutMs?: number;
  /**
   * The agents fill the GPU nodes' model caches (node-model-cache.ts): the nodes' hub cache directory (the agents'
   * `--model-cache-dir`, the pods' hostPath) and the hub Corral checks models on. Absent: models as without agents.
   */
  models?: { hubDir: string; hubUrl: string };
}

export interface NodeAgentTiersOptions extends NodeAgentSettings {
  /** The pod a worker runs in, as the watch last saw it. */
  podOf: (workerId: string) => Pod | undefined;
  logger: Logger;
}

const DEFAULT_CALL_TIMEOUT_MS = 10_000;
/** Agents asked at once for adopted pods' tiers after a restart. */
const ADOPT_CALLS_AT_ONCE = 16;
/** What a suspend's or a restore's call may take past the driver's own deadline (the agent's freezes, its answer). */
const CHECKPOINT_MARGIN_MS = 10_000;

const SUSPEND_OFF =
  'on Kubernetes a suspended pod keeps its nvidia.com/gpu, so a suspend frees no GPU the scheduler could give ' +
  'another pod (kubernetes.nodeAgent.suspend turns it on)';

function message(error: unknown): string {
  if (error instanceof Error && error.cause instanceof Error)
    return `${error.message} (${error.cause.message})`;
  return error instanceof Error ? error.message : String(error);
}

export class NodeAgentTiers implements IdleTiers {
  readonly suspendable: TierSupport;
  readonly #o: NodeAgentTiersOptions;
  /** The tier of each worker this runtime moved there (listed as the worker's `tier`). */
  readonly #tiers = new Map<string, IdleTier>();

  constructor(options: NodeAgentTiersOptions) {
    this.#o = options;
    this.suspendable = options.suspend ? { available: true } : { available: false, reason: SUSPEND_OFF };
  }

  /** The tier the worker was moved to, if any. */
  tierOf(workerId: string): IdleTier | undefined {
    return this.#tiers.get(workerId);
  }

  /** The worker's pod is gone: it holds no tier any more. */
  forget(workerId: string): void {
    this.#tiers.delete(workerId);
  }

  /**
   * After a restart, the tiers of the pods found running (`workers`, at the first listing): the agent on each one's
   * node is asked (`GET /v1/pods/<uid>`, read from the pod's cgroup), so that a pod frozen or suspended when Corral
   * was killed is listed in its tier (the controller keeps it there: managed-worker.ts, adoptedInTier), not as
   * running, which its next health probe would fail and the controller replace. A pod whose agent does not answer
   * is left as running, said in the log. Never throws.
   */
  async adopt(workers: readonly { workerId: string; pod: Pod }[]): Promise<void> {
    const unknown = workers.filter((w) => !this.#tiers.has(w.workerId));
    for (let n = 0; n < unknown.length; n += ADOPT_CALLS_AT_ONCE) {
      await Promise.all(
        unknown.slice(n, n + ADOPT_CALLS_AT_ONCE).map(async ({ workerId, pod }) => {
          try {
            const { tier } = await this.#request(workerId, pod, 'read', 'GET', this.#timeout());
            if (tier === 'frozen' || tier === 'suspended') {
              this.#tiers.set(workerId, tier);
              this.#o.logger.info({ workerId, tier }, 'adopted a pod its node agent holds in an idle tier');
            }
          } catch (error) {
            this.#o.logger.warn(
              { workerId, err: message(error) },
              "cannot ask the node agent for an adopted pod's tier; taken as running",
            );
          }
        }),
      );
    }
  }

  async freeze(workerId: string): Promise<void> {
    await this.#call(workerId, 'freeze', this.#timeout());
    if (this.#tiers.get(workerId) !== 'suspended') this.#tiers.set(workerId, 'frozen');
  }

  async thaw(workerId: string): Promise<void> {
    await this.#call(workerId, 'thaw', this.#timeout());
    this.#tiers.delete(workerId);
  }

  async suspend(workerId: string, options: { deadlineMs: number }): Promise<SuspendedState> {
    if (!this.suspendable.available) throw new RuntimeError('RUNTIME_ERROR', SUSPEND_OFF);
    const state = await this.#call(
      workerId,
      'suspend',
      options.deadlineMs + CHECKPOINT_MARGIN_MS,
      options.deadlineMs,
    );
    this.#tiers.set(workerId, 'suspended');
    return { gpuBytes: state.gpuBytes ?? {} };
  }

  async restore(workerId: string, options: { deadlineMs: number }): Promise<void> {
    await this.#call(workerId, 'restore', options.deadlineMs + CHECKPOINT_MARGIN_MS, options.deadlineMs);
    this.#tiers.delete(workerId);
  }

  #timeout(): number {
    return this.#o.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
  }

  /** One move of the worker's pod (as the watch last saw it) through the agent on its node. */
  #call(workerId: string, move: PodTierMove, timeoutMs: number, deadlineMs?: number): Promise<PodTierState> {
    return this.#request(workerId, this.#o.podOf(workerId), move, 'POST', timeoutMs, deadlineMs);
  }

  /** One call to the agent on the pod's node; its failures as the runtime's (UNAVAILABLE: no agent answers). */
  async #request(
    workerId: string,
    pod: Pod | undefined,
    move: PodTierMove | 'read',
    method: 'GET' | 'POST',
    timeoutMs: number,
    deadlineMs?: number,
  ): Promise<PodTierState> {
    const uid = pod?.metadata?.uid;
    const hostIP = pod?.status?.hostIP;
    if (!pod || uid === undefined) throw new RuntimeError('NOT_FOUND', `no pod of worker ${workerId}`);
    const node = pod.spec?.nodeName ?? hostIP ?? 'its node';
    if (hostIP === undefined)
      throw new RuntimeError(
        'UNAVAILABLE',
        `the pod of worker ${workerId} has no host IP yet: no node agent to ask`,
      );
    const query = deadlineMs === undefined ? '' : `?deadlineMs=${deadlineMs}`;
    const path = move === 'read' ? NODE_AGENT_PATHS.pod(uid) : NODE_AGENT_PATHS.move(uid, move);
    const url = `${agentBase(hostIP, this.#o.port)}${path}${query}`;
    let answer: Response;
    try {
      answer = await fetch(url, {
        method,
        headers: bearer(this.#o.token),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      throw new RuntimeError(
        'UNAVAILABLE',
        `no node agent answers on node ${node} (${hostIP}:${this.#o.port}): ${message(error)}`,
        { cause: error },
      );
    }
    const body = (await answer.json().catch(() => ({}))) as Partial<PodTierState> & {
      reason?: string;
      message?: string;
    };
    if (answer.ok) return body as PodTierState;
    const said = `the node agent on ${node} refused to ${move} the pod: ${body.reason ?? answer.status}: ${body.message ?? ''}`;
    if (body.reason === 'NODE_AGENT_POD_NOT_FOUND') throw new RuntimeError('NOT_FOUND', said);
    throw new RuntimeError(answer.status === 401 ? 'UNAVAILABLE' : 'RUNTIME_ERROR', said);
  }
}
