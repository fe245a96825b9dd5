/**
 * The HTTP protocol between the controller (node-agent-tiers.ts) and the node agent on each node (`corral node`,
 * src/node/): its paths, its bearer token header and the shapes of its answers, in one place for both sides. Every
 * call carries `Authorization: Bearer <token>` (the Secret both mount); an error answers the shape every Corral
 * error has (`reason`: a code of src/errors/node-agent-catalogue.ts).
 */

/** The port the agent listens on (hostNetwork) unless configured otherwise. */
export const DEFAULT_NODE_AGENT_PORT = 9479;

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
} as const;

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

/** The header every call carries. */
export function bearer(token: string): Record<string, string> {
  return { authorization: `Bearer ${token}` };
}
