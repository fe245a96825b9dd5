/**
 * The HTTP protocol between the controller (node-agent-tiers.ts) and the node agent on each node (`corral node`,
 * src/node/): its paths, its bearer token header and the shapes of its answers, in one place for both sides. Every
 * call carries `Authorization: Bearer <token>` (the Secret both mount); an error answers the shape every Corral
 * error has (`reason`: a code of src/errors/node-agent-catalogue.ts). The model calls fill the node's hub cache (the
 * hostPath the worker pods mount; docs/models.md, On Kubernetes), list it and remove from it: the one body the agent
 * reads is an ensure's, which carries the owner's hub token (never in a path or a query, never logged) and the models
 * endpoints name (which the node's disk budget never evicts: the agent cannot read Corral's store).
 */
import type { ModelRef } from '../../domain/models.js';
import type { CachedModel, ModelProgress, ModelRefusal, ModelRemoval } from '../../ports/model-cache.js';

/** The port the agent listens on (hostNetwork) unless configured otherwise. */
export const DEFAULT_NODE_AGENT_PORT = 9479;

/**
 * The node's hub cache unless configured otherwise: the agent's `--model-cache-dir` and the worker pods' hostPath
 * (`kubernetes.nodeAgent.modelCacheDir`) must name the same directory, as the manifests do.
 */
export const DEFAULT_NODE_MODEL_CACHE_DIR = '/var/lib/corral/models/hub';

export type PodTierMove = 'freeze' | 'thaw' | 'suspend' | 'restore';

/** A pod's tier as its node sees it: its cgroup's freezer, and the driver's hold on its GPU processes. */
export type PodTier = 'running' | 'frozen' | 'suspended';

export const NODE_AGENT_PATHS = {
  /** GET: the agent's status (NodeAgentStatus). */
  status: '/v1/status',
  /** GET: the pod's state (PodTierState). */
  pod: (uid: string) => `/v1/pods/${encodeURIComponent(uid)}`,
  /** POST: a tier move of the pod; suspend and restore take `?deadlineMs=`. */
  move: (uid: string, move: PodTierMove) => `/v1/pods/${encodeURIComponent(uid)}/${move}`,
  /** GET: the models in the node's cache (NodeCachedModel[], those being downloaded too). */
  models: '/v1/models',
  /** DELETE, `?revision=` for one revision: remove a model from the node's cache (NodeModelRemoved). */
  model: (name: string) => `/v1/models/${name.split('/').map(encodeURIComponent).join('/')}`,
  /** POST: make a model present in the node's cache (NodeModelEnsure); answers when it is (NodeModelEnsured). */
  ensureModel: '/v1/models/ensure',
  /** GET `?name=&revision=`: the download of a model under way on the node (NodeModelProgress). */
  modelProgress: '/v1/models/progress',
} as const;

/**
 * The body of an ensure: the model, the owner's hub token (null: none), and the hub Corral checked it on (its
 * `models.hubUrl`): an agent whose `--hub-url` differs refuses it (NODE_AGENT_BAD_REQUEST) rather than fetch from
 * another hub than the one that answered at create.
 */
export interface NodeModelEnsure {
  model: Pick<ModelRef, 'name' | 'revision' | 'allowPatterns'>;
  token: string | null;
  hubUrl: string;
  /**
   * The models (`org/name`) endpoints name now, every owner's: the node's disk budget (`--model-disk-budget-gb`)
   * never evicts them. Eviction runs only at the end of an ensure, so the set the latest ensure carried is current.
   */
  named: string[];
}

/**
 * An ensure's answer: the model present in the node's cache (with the models removed from the node while it ran,
 * evicted by its disk budget: their node labels go), or the hub's refusal of the token.
 */
export type NodeModelEnsured = { model: CachedModel; evicted: string[] } | { refusal: ModelRefusal };

/** A model in the node's cache as the listing says it: with its download under way, if any. */
export interface NodeCachedModel extends CachedModel {
  download: ModelProgress | null;
}

/** A removal's answer: what it did, and whether the node still holds a revision of the model (its label stays). */
export interface NodeModelRemoved {
  removal: ModelRemoval;
  held: boolean;
}

/** A progress's answer: null when no download of that model is under way on the node. */
export interface NodeModelProgress {
  progress: ModelProgress | null;
}

/** What a GET of a pod, and every move, answers. */
export interface PodTierState {
  uid: string;
  tier: PodTier;
  /** The processes in the pod's cgroup (its containers', the sandbox's too). */
  processes: number;
  /** A suspend's answer: the GPU memory its processes held, per GPU uuid, in bytes. */
  gpuBytes?: Record<string, number>;
}

/** One pod the agent holds in a tier (moved there by it since it started). */
export interface HeldPod {
  uid: string;
  tier: Exclude<PodTier, 'running'>;
  /** When it was moved there, ms since the epoch. */
  since: number;
}

export interface NodeAgentStatus {
  /** The cgroup hierarchy it freezes pods in. */
  cgroup: 'v1' | 'v2';
  /** Whether it can suspend (a GPU checkpointer with the driver's API here), and why not. */
  suspend: { available: true } | { available: false; reason: string };
  held: HeldPod[];
}

/** The agent on a node: `http://{address}:{port}` (an IPv6 address in brackets). */
export function agentBase(address: string, port: number): string {
  return `http://${address.includes(':') ? `[${address}]` : address}:${port}`;
}

/** The header every call carries. */
export function bearer(token: string): Record<string, string> {
  return { authorization: `Bearer ${token}` };
}
