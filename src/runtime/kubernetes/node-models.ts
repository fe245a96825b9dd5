/**
 * The decisions of filling the GPU nodes' model caches through their node agents (node-model-cache.ts), pure: which
 * nodes are asked and at which address, the progress the waiting worker shows (every asked node's bytes summed), and
 * what the fetches' ends make of the model (docs/models.md, On Kubernetes): refused when the hub refuses the token,
 * failed when no node could fetch it, else ready, with the nodes that hold it labelled and those that failed
 * unlabelled (the pods' required node affinity keeps workers off a node without the model).
 */
import type { CachedModel, ModelProgress, ModelRefusal } from '../../ports/model-cache.js';
import type { Node } from './api.js';
import { gpuNodes } from './cluster-products.js';

/** A node whose agent is asked: its name (for its label) and the address its agent listens at (hostNetwork). */
export interface ModelNode {
  name: string;
  address: string;
  /** The node's labels as last seen: which models it holds (`modelNodeLabel`). */
  labels: Readonly<Record<string, string>>;
}

/**
 * The GPU nodes (schedulable, with allocatable GPUs: where a worker can go) with an address, the InternalIP first
 * (the pods' `status.hostIP`, where the idle tiers reach the same agents).
 */
export function modelNodes(nodes: readonly Node[], gpuResource?: string): ModelNode[] {
  const found: ModelNode[] = [];
  for (const node of gpuNodes(nodes, gpuResource)) {
    const name = node.metadata?.name;
    const addresses = node.status?.addresses ?? [];
    const address = (addresses.find((a) => a.type === 'InternalIP') ?? addresses[0])?.address;
    if (name !== undefined && address !== undefined && address !== '')
      found.push({ name, address, labels: node.metadata?.labels ?? {} });
  }
  return found;
}

/**
 * The GPU nodes by a model's label (`modelNodeLabel`): those labelled as holding it, and those lacking it (joined
 * since the model was fetched, or their fetch failed, or their cache lost it).
 */
export function byModelLabel(
  nodes: readonly ModelNode[],
  label: string,
): { labelled: ModelNode[]; lacking: ModelNode[] } {
  const labelled: ModelNode[] = [];
  const lacking: ModelNode[] = [];
  for (const node of nodes) (node.labels[label] === undefined ? lacking : labelled).push(node);
  return { labelled, lacking };
}

/** Labels this process wrote to nodes (node -> label -> value; null: removed), kept until the node watch shows them. */
export type WrittenLabels = Map<string, Map<string, string | null>>;

/**
 * The nodes as the watch saw them, with the labels this process wrote since laid over them: the watch trails a patch
 * by a moment, and a node just labelled must not count as lacking its model (nor one just unlabelled as holding it).
 * A written label the watch now shows is forgotten (`written` is pruned), so a later change by anyone else counts.
 */
export function withWrittenLabels(nodes: readonly ModelNode[], written: WrittenLabels): ModelNode[] {
  return nodes.map((node) => {
    const mine = written.get(node.name);
    if (mine === undefined) return node;
    const labels: Record<string, string> = { ...node.labels };
    for (const [label, value] of mine) {
      if ((node.labels[label] ?? null) === value) mine.delete(label);
      else if (value === null) delete labels[label];
      else labels[label] = value;
    }
    if (mine.size === 0) written.delete(node.name);
    return { ...node, labels };
  });
}

/** One node's fetch as it stands: under way (with its agent's last progress, if any), ended, or failed. */
export type NodeFetch =
  | { phase: 'fetching'; progress: ModelProgress | null }
  | { phase: 'ready'; model: CachedModel }
  | { phase: 'refused'; refusal: ModelRefusal }
  | { phase: 'failed'; message: string };

/**
 * What the waiting worker shows: the bytes of every node still fetching or done, summed, against the model's bytes
 * on each of them (a node with no total yet counts with the largest one known: the same model), at the rates summed.
 * Null while no node has said a total (resolving on the hub). Failed and refused nodes are left out.
 */
export function summedProgress(
  model: { name: string; revision: string },
  fetches: readonly NodeFetch[],
): ModelProgress | null {
  let known = 0;
  for (const f of fetches) {
    if (f.phase === 'ready') known = Math.max(known, f.model.bytes);
    if (f.phase === 'fetching' && f.progress) known = Math.max(known, f.progress.bytesTotal);
  }
  if (known === 0) return null;
  let bytesDone = 0;
  let bytesTotal = 0;
  let bytesPerSecond = 0;
  for (const f of fetches) {
    if (f.phase === 'ready') {
      bytesDone += f.model.bytes;
      bytesTotal += f.model.bytes;
    } else if (f.phase === 'fetching') {
      bytesDone += f.progress?.bytesDone ?? 0;
      bytesTotal += f.progress?.bytesTotal ?? known;
      bytesPerSecond += f.progress?.bytesPerSecond ?? 0;
    }
  }
  return { name: model.name, revision: model.revision, bytesDone, bytesTotal, bytesPerSecond };
}

export type NodeFetchVerdict =
  | { kind: 'refused'; refusal: ModelRefusal }
  | { kind: 'failed'; message: string }
  /** `label`: the nodes that hold it now; `unlabel`: those whose fetch failed (they may hold another revision). */
  | { kind: 'ready'; model: CachedModel; label: string[]; unlabel: string[] };

/**
 * The model once every asked node's fetch has ended. A refusal on any node is the owner's (the same token, the same
 * hub): refused, whatever other nodes hold. Else ready where at least one node holds it: the model counts as ready
 * when every node that could fetch it has it, and workers go only to those (a node that failed is retried by the
 * next fetch of the model). None: failed, naming each node's reason.
 */
export function nodeFetchVerdict(ended: readonly { node: string; fetch: NodeFetch }[]): NodeFetchVerdict {
  for (const { fetch } of ended)
    if (fetch.phase === 'refused') return { kind: 'refused', refusal: fetch.refusal };
  const ready = ended.filter((e) => e.fetch.phase === 'ready');
  const first = ready[0]?.fetch;
  const failed = ended.filter((e) => e.fetch.phase !== 'ready');
  if (first?.phase !== 'ready') {
    const reasons = failed.map(
      (e) => `${e.node}: ${e.fetch.phase === 'failed' ? e.fetch.message : 'not ended'}`,
    );
    return { kind: 'failed', message: `no node could fetch it (${reasons.join('; ')})` };
  }
  return {
    kind: 'ready',
    model: first.model,
    label: ready.map((e) => e.node),
    unlabel: failed.map((e) => e.node),
  };
}
