/**
 * The GPU nodes' model caches on Kubernetes with node agents (docs/models.md, On Kubernetes), as `MachineModelCaches`:
 * what `ModelFetcher` needs of a `ModelCache` (`ensure`, `onRemoved`, the nodes' `hubDir`), each node's listing for
 * `GET models`, and a removal from every node for `DELETE models`, done by the agents of the GPU nodes. An ensure
 * asks every GPU node's agent to fetch the model into its node's cache (the hostPath the pods mount), with the
 * owner's token and the models endpoints name (which the node's disk budget keeps) in the body; reads their progress
 * each second and reports it summed (node-models.ts); when every node has ended, labels the nodes that hold it
 * (`modelNodeLabel`, which the pods require) and unlabels those that failed. The hub's refusal on any node is the
 * owner's: the ensure throws it, so a gated model is never mounted for an owner without access even where the node
 * has its files. A model that leaves a node (evicted by its budget, as an ensure's answer says, or removed) is
 * unlabelled there when no revision of it is left, and told to `onRemoved`: the controller fetches it again. A GPU
 * node without a model's label (`lacking`: joined later, or its fetch failed) gets it at the next worker's start
 * (`fillLacking`: only those nodes are asked). Before a worker's pod is made, the nodes labelled as holding its models
 * are asked whether their caches still do (`confirmHeld`): a node whose cache was emptied while it kept its labels (its
 * agent restarted on an empty disk) is unlabelled, and the model told removed, as if it had been evicted there.
 */
import http from 'node:http';
import path from 'node:path';
import type { Logger } from 'pino';
import { modelRepoDir } from '../../domain/model-refs.js';
import type { ModelRef } from '../../domain/models.js';
import {
  type CachedModel,
  combinedRemoval,
  type MachineModel,
  type MachineModelCaches,
  type MachineRemoval,
  type ModelProgress,
  ModelRefusedError,
} from '../../ports/model-cache.js';
import { RuntimeError } from '../types.js';
import {
  agentBase,
  bearer,
  NODE_AGENT_PATHS,
  type NodeCachedModel,
  type NodeModelEnsure,
  type NodeModelEnsured,
  type NodeModelProgress,
  type NodeModelRemoved,
} from './node-agent-protocol.js';
import {
  byModelLabel,
  type ModelNode,
  type NodeFetch,
  nodeFetchVerdict,
  summedProgress,
  type WrittenLabels,
  withWrittenLabels,
} from './node-models.js';
import { modelNodeLabel } from './pod-spec.js';

export interface NodeModelCacheOptions {
  /** The hub cache directory on every node (the agents' `--model-cache-dir`, the pods' hostPath). */
  hubDir: string;
  /** Corral's `models.hubUrl`: sent with each ensure, which an agent fetching from another hub refuses. */
  hubUrl: string;
  /** The agents' port at each node's address, and their shared token (never logged). */
  port: number;
  token: string;
  /** The GPU nodes the runtime knows now (node-catalog.ts, once its first listing is done). */
  nodes: () => Promise<ModelNode[]>;
  /** The GPU nodes, with their labels, as the runtime's watch last saw them (none before its first listing). */
  nodesNow: () => ModelNode[];
  /** Sets (a string) or removes (null) a node's labels. */
  labelNode: (name: string, labels: Record<string, string | null>) => Promise<void>;
  /** The models (`org/name`) endpoints name, every owner's: sent with each ensure, the nodes' budgets keep them. */
  namedModels: () => Promise<ReadonlySet<string>>;
  logger: Logger;
  /** How often the agents' progress is read while they fetch; default 1 s. */
  progressEveryMs?: number;
  /**
   * How long a confirmation that the labelled nodes hold a model stands for the pods made after it (a burst of pods
   * shares one round of listings); default 2 s.
   */
  confirmEveryMs?: number;
  clock?: () => number;
}

/** A confirmation that the nodes labelled as holding a model do: when it began, and the nodes found holding it. */
interface Confirmation {
  at: number;
  /** Null: no GPU node was labelled as holding it (nothing to confirm: the scheduler waits for a label). */
  holding: Promise<string[] | null>;
}

/** The value of a node's model label: the label's presence is what the pods require. */
const HELD = 'true';
/** How long a listing or a removal waits for an agent (a removal never waits for a download: it is refused). */
const AGENT_CALL_TIMEOUT_MS = 30_000;
/** How long a pod's creation waits for an agent to list its cache: an agent that does not answer keeps its labels. */
const CONFIRM_TIMEOUT_MS = 5_000;
/** How long a confirmation stands by default (`confirmEveryMs`). */
const CONFIRM_EVERY_MS = 2_000;

export class NodeModelCache implements MachineModelCaches {
  readonly hubDir: string;
  readonly #o: NodeModelCacheOptions;
  readonly #removalListeners = new Set<(name: string) => void>();
  /** Model name -> its latest confirmation on the labelled nodes (`confirmHeld`). */
  readonly #confirmations = new Map<string, Confirmation>();
  /** The labels this process set or removed, until the node watch shows them. */
  readonly #written: WrittenLabels = new Map();

  constructor(options: NodeModelCacheOptions) {
    this.#o = options;
    this.hubDir = options.hubDir;
  }

  /** Fetches the model on every GPU node (docs/models.md, On Kubernetes); see the file's comment. */
  async ensure(
    model: ModelRef,
    token: string | null,
    onProgress?: (progress: ModelProgress) => void,
  ): Promise<CachedModel> {
    const nodes = await this.#nodes();
    if (nodes.length === 0)
      throw new Error(
        'no GPU node to fetch it on (no schedulable node with allocatable GPUs and an address)',
      );
    return this.#fill(nodes, model, token, onProgress);
  }

  /**
   * Fetches a model on the GPU nodes that lack its label only (joined since it was fetched, or their fetch failed,
   * or their cache lost it); the nodes that hold it are not asked. Resolves to the nodes asked (none: nothing to do).
   */
  async fillLacking(model: ModelRef, token: string | null): Promise<string[]> {
    const { lacking } = byModelLabel(await this.#nodes(), modelNodeLabel(modelRepoDir(model.name)));
    if (lacking.length > 0) await this.#fill(lacking, model, token);
    return lacking.map((node) => node.name);
  }

  /** Asks each of `nodes` to fetch the model, reports their progress summed, and labels those that hold it after. */
  async #fill(
    nodes: readonly ModelNode[],
    model: ModelRef,
    token: string | null,
    onProgress?: (progress: ModelProgress) => void,
  ): Promise<CachedModel> {
    // Read before any node is asked: what the nodes' budgets keep is what endpoints name now.
    const named = [...(await this.#o.namedModels())];
    const fetches = new Map<string, NodeFetch>(
      nodes.map((n) => [n.name, { phase: 'fetching', progress: null }]),
    );
    const report = () => {
      const sum = summedProgress(model, [...fetches.values()]);
      if (sum && onProgress) onProgress(sum);
    };
    let reading = false;
    const timer = setInterval(() => {
      if (reading) return;
      reading = true;
      void this.#readProgress(model, nodes, fetches)
        .then(report)
        .finally(() => {
          reading = false;
        });
    }, this.#o.progressEveryMs ?? 1_000);
    try {
      await Promise.all(
        nodes.map(async (node) => {
          fetches.set(node.name, await this.#ensureOn(node, model, token, named));
          report();
        }),
      );
    } finally {
      clearInterval(timer);
    }
    const verdict = nodeFetchVerdict(
      nodes.map((n) => ({ node: n.name, fetch: fetches.get(n.name) ?? failed() })),
    );
    if (verdict.kind === 'refused') throw new ModelRefusedError(verdict.refusal);
    if (verdict.kind === 'failed') throw new Error(verdict.message);
    const label = modelNodeLabel(modelRepoDir(model.name));
    const labelled = await this.#label(verdict.label, label, HELD);
    await this.#label(verdict.unlabel, label, null);
    // The nodes just fetched it: a confirmation made before (one that found it gone, say) is no longer true.
    this.#confirmations.delete(model.name);
    if (labelled.length === 0)
      throw new Error(
        `the nodes that hold it could not be labelled ${label} (Corral's ClusterRole needs patch on nodes)`,
      );
    this.#o.logger.info(
      { model: model.name, revision: model.revision, nodes: labelled, failed: verdict.unlabel },
      "model in the GPU nodes' caches",
    );
    return { ...verdict.model, repoDir: path.join(this.hubDir, modelRepoDir(model.name)) };
  }

  /** Whether a GPU node seen now lacks the model's label (joined later, its fetch failed, or its agent lost it). */
  lacking(model: Pick<ModelRef, 'name'>): boolean {
    return byModelLabel(this.#nodesNow(), modelNodeLabel(modelRepoDir(model.name))).lacking.length > 0;
  }

  /**
   * Before a pod that mounts these models is made: asks the agent of each GPU node labelled as holding one whether
   * its cache does (at most once per `confirmEveryMs` per model; the pods made meanwhile share the answer). A node
   * whose cache lacks it is unlabelled and the model told removed, so the pod goes to a node that holds it and the
   * controller fetches it again. Throws when every labelled node lacked one of them: the pod would have nowhere to go,
   * and the worker that replaces it waits for the fetch. An agent that does not answer keeps its node's labels.
   */
  async confirmHeld(names: readonly string[]): Promise<void> {
    const found = await Promise.all(
      names.map(async (name) => ({ name, holding: await this.#confirmed(name) })),
    );
    const gone = found.filter((f) => f.holding !== null && f.holding.length === 0).map((f) => f.name);
    if (gone.length > 0)
      throw new RuntimeError(
        'RUNTIME_ERROR',
        `model ${gone.join(', ')} is no longer in any GPU node's cache (a node's cache was emptied since it was fetched): it is fetched again for the next worker`,
      );
  }

  #confirmed(name: string): Promise<string[] | null> {
    const now = (this.#o.clock ?? Date.now)();
    const last = this.#confirmations.get(name);
    if (last && now - last.at < (this.#o.confirmEveryMs ?? CONFIRM_EVERY_MS)) return last.holding;
    const holding = this.#confirm(name);
    this.#confirmations.set(name, { at: now, holding });
    return holding;
  }

  /** The labelled nodes whose agent lists the model (or does not answer); the others are unlabelled. */
  async #confirm(name: string): Promise<string[] | null> {
    const { labelled } = byModelLabel(this.#nodesNow(), modelNodeLabel(modelRepoDir(name)));
    if (labelled.length === 0) return null;
    const held = await Promise.all(
      labelled.map(async (node) => {
        try {
          const models = (await this.#call(
            node,
            'GET',
            NODE_AGENT_PATHS.models,
            CONFIRM_TIMEOUT_MS,
          )) as NodeCachedModel[];
          if (models.some((model) => model.name === name)) return true;
          await this.#removedFrom(node.name, [name]);
          return false;
        } catch (error) {
          this.#o.logger.warn(
            { node: node.name, model: name, err: error instanceof Error ? error.message : String(error) },
            "cannot confirm that a GPU node's cache holds a model; its label stays",
          );
          return true;
        }
      }),
    );
    return labelled.filter((_, n) => held[n]).map((node) => node.name);
  }

  onRemoved(listener: (name: string) => void): () => void {
    this.#removalListeners.add(listener);
    return () => this.#removalListeners.delete(listener);
  }

  /** Each GPU node's models, as its agent lists them; a node whose agent does not answer is logged and left out. */
  async listMachines(): Promise<MachineModel[]> {
    const listings = await Promise.all(
      (await this.#nodes()).map(async (node) => {
        try {
          const models = (await this.#call(node, 'GET', NODE_AGENT_PATHS.models)) as NodeCachedModel[];
          return models.map((model): MachineModel => ({ ...model, machine: node.name }));
        } catch (error) {
          this.#o.logger.warn(
            { node: node.name, err: error instanceof Error ? error.message : String(error) },
            "cannot list a GPU node's models",
          );
          return [];
        }
      }),
    );
    return listings.flat();
  }

  /**
   * Removes the model (one revision, or every one) from every GPU node: a node left with no revision of it is
   * unlabelled. Refused (`downloading`) on a node where it is being fetched; the others remove it all the same.
   */
  async removeEverywhere(name: string, revision?: string): Promise<MachineRemoval> {
    const query = revision === undefined ? '' : `?${new URLSearchParams({ revision })}`;
    const unreachable: MachineRemoval['unreachable'] = [];
    const removals = await Promise.all(
      (await this.#nodes()).map(async (node) => {
        try {
          const answer = (await this.#call(
            node,
            'DELETE',
            `${NODE_AGENT_PATHS.model(name)}${query}`,
          )) as NodeModelRemoved;
          if (answer.removal === 'removed' && !answer.held) await this.#removedFrom(node.name, [name]);
          else if (answer.removal === 'removed') this.#tellRemoved(name);
          return answer.removal;
        } catch (error) {
          unreachable.push({
            machine: node.name,
            message: error instanceof Error ? error.message : String(error),
          });
          return 'not_cached' as const;
        }
      }),
    );
    return { removal: combinedRemoval(removals), unreachable };
  }

  /** Models gone from a node's cache: its labels for them removed, and the controller told (it fetches them again). */
  async #removedFrom(node: string, names: readonly string[]): Promise<void> {
    for (const name of names) {
      await this.#label([node], modelNodeLabel(modelRepoDir(name)), null);
      this.#o.logger.info({ node, model: name }, "model gone from a GPU node's cache; its label removed");
      this.#tellRemoved(name);
    }
  }

  /** The GPU nodes, with the labels this process wrote laid over what the watch saw (it trails a patch). */
  async #nodes(): Promise<ModelNode[]> {
    return withWrittenLabels(await this.#o.nodes(), this.#written);
  }

  #nodesNow(): ModelNode[] {
    return withWrittenLabels(this.#o.nodesNow(), this.#written);
  }

  #tellRemoved(name: string): void {
    for (const listener of this.#removalListeners) listener(name);
  }

  /** A short call to a node's agent: its JSON answer, or an error naming its status and reason. */
  async #call(
    node: ModelNode,
    method: 'GET' | 'DELETE',
    path: string,
    timeoutMs = AGENT_CALL_TIMEOUT_MS,
  ): Promise<unknown> {
    const answer = await fetch(`${this.#base(node)}${path}`, {
      method,
      headers: bearer(this.#o.token),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const body = (await answer.json()) as { reason?: string; message?: string };
    if (!answer.ok)
      throw new Error(`the node agent answered ${answer.status} ${body.reason ?? ''}: ${body.message ?? ''}`);
    return body;
  }

  /** Sets (or removes) the label on each node; answers the nodes done. A failure is logged, not thrown. */
  async #label(nodes: readonly string[], label: string, value: string | null): Promise<string[]> {
    const done: string[] = [];
    await Promise.all(
      nodes.map(async (node) => {
        try {
          await this.#o.labelNode(node, { [label]: value });
          const written = this.#written.get(node) ?? new Map<string, string | null>();
          this.#written.set(node, written.set(label, value));
          done.push(node);
        } catch (error) {
          this.#o.logger.warn(
            { node, label, err: error instanceof Error ? error.message : String(error) },
            value === null
              ? 'cannot remove a model label from a node'
              : 'cannot label a node as holding a model',
          );
        }
      }),
    );
    return done;
  }

  /** The progress of each node still fetching, as its agent says it now; a node that does not answer keeps its last. */
  async #readProgress(
    model: ModelRef,
    nodes: readonly ModelNode[],
    fetches: Map<string, NodeFetch>,
  ): Promise<void> {
    const query = new URLSearchParams({ name: model.name, revision: model.revision });
    await Promise.all(
      nodes.map(async (node) => {
        if (fetches.get(node.name)?.phase !== 'fetching') return;
        try {
          const answer = await fetch(`${this.#base(node)}${NODE_AGENT_PATHS.modelProgress}?${query}`, {
            headers: bearer(this.#o.token),
            signal: AbortSignal.timeout(5_000),
          });
          if (!answer.ok) return;
          const { progress } = (await answer.json()) as NodeModelProgress;
          if (fetches.get(node.name)?.phase === 'fetching')
            fetches.set(node.name, { phase: 'fetching', progress });
        } catch {
          // The ensure's own answer says whether the agent is there.
        }
      }),
    );
  }

  /**
   * One node's ensure: a request held open until the agent's cache has the model (a multi-GB download takes longer
   * than fetch's own header timeout, so plain http, without one).
   */
  async #ensureOn(
    node: ModelNode,
    model: ModelRef,
    token: string | null,
    named: string[],
  ): Promise<NodeFetch> {
    const body: NodeModelEnsure = {
      model: { name: model.name, revision: model.revision, allowPatterns: model.allowPatterns },
      token,
      hubUrl: this.#o.hubUrl,
      named,
    };
    try {
      const { status, text } = await post(
        `${this.#base(node)}${NODE_AGENT_PATHS.ensureModel}`,
        this.#o.token,
        body,
      );
      const answer = JSON.parse(text) as NodeModelEnsured & { reason?: string; message?: string };
      if (status === 200 && 'model' in answer) {
        await this.#removedFrom(node.name, answer.evicted);
        return { phase: 'ready', model: answer.model };
      }
      if (status === 200 && 'refusal' in answer) return { phase: 'refused', refusal: answer.refusal };
      return failed(`the node agent answered ${status} ${answer.reason ?? ''}: ${answer.message ?? text}`);
    } catch (error) {
      return failed(
        `no node agent answers at ${node.address}:${this.#o.port} (${error instanceof Error ? error.message : String(error)})`,
      );
    }
  }

  #base(node: ModelNode): string {
    return agentBase(node.address, this.#o.port);
  }
}

function failed(message = 'not ended'): NodeFetch {
  return { phase: 'failed', message };
}

/**
 * A JSON POST with the agent's token, answered whenever the agent is done (no timeout: the download's length; the
 * agent's server has read the body by then, so its request timeout does not cut the wait either).
 */
function post(url: string, agentToken: string, body: unknown): Promise<{ status: number; text: string }> {
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const request = http.request(
      url,
      {
        method: 'POST',
        headers: {
          ...bearer(agentToken),
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(payload),
        },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }),
        );
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    // Quiet for as long as the download takes: TCP keep-alives tell a dead node from a slow one.
    request.on('socket', (socket) => socket.setKeepAlive(true, 30_000));
    request.end(payload);
  });
}
