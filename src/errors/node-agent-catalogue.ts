/**
 * The node agent's error catalogue (`corral node`, src/node/): how a call of the controller to the agent on a pod's
 * node failed, each with a stable UPPER_SNAKE code and the status the agent answers it with. The Kubernetes
 * runtime's idle tiers read the code from the answer (`reason`); docs/kubernetes.md documents every code (a test
 * checks it). Never rename a code.
 */
import { CorralError, type CorralErrorOptions } from './corral-error.js';

export const NODE_AGENT_ERROR_CATALOGUE = {
  NODE_AGENT_UNAUTHENTICATED: {
    status: 401,
    description: 'The Authorization header is missing or is not the bearer token the agent was given.',
  },
  NODE_AGENT_NO_ROUTE: { status: 404, description: 'No such path or method on the agent.' },
  NODE_AGENT_POD_NOT_FOUND: {
    status: 404,
    description:
      'No cgroup of a pod with that UID on this node, under any of the kubelet layouts the agent knows (the pod is on another node, or gone).',
  },
  NODE_AGENT_BAD_REQUEST: {
    status: 400,
    description:
      "A parameter is invalid (a deadline that is not a positive number, a model's name or revision, an ensure's body, or a hub other than the agent's).",
  },
  NODE_AGENT_FREEZER_FAILED: {
    status: 500,
    description:
      "The pod's cgroup could not be frozen or thawed (a write refused, or the kernel did not say it was done in time; a freeze that does not complete is thawed back).",
  },
  NODE_AGENT_SUSPEND_UNAVAILABLE: {
    status: 503,
    description:
      'The agent cannot suspend: this node has no GPU checkpointer (no GPUs, or a driver without the checkpoint API); the message says why.',
  },
  NODE_AGENT_CHECKPOINT_FAILED: {
    status: 500,
    description:
      "A GPU checkpoint or restore of one of the pod's processes failed; the message names the driver's code (a failed restore is final).",
  },
  NODE_AGENT_MODEL_FAILED: {
    status: 500,
    description:
      "A model could not be put in the node's cache (the hub cut the download, a file's bytes did not match, the node's disk); the message says why. The hub's refusal of the token is an answer, not this error.",
  },
} as const;

export type NodeAgentErrorCode = keyof typeof NODE_AGENT_ERROR_CATALOGUE;

export class NodeAgentError extends CorralError<NodeAgentErrorCode> {
  override name = 'NodeAgentError';

  constructor(code: NodeAgentErrorCode, message: string, options?: CorralErrorOptions) {
    super(code, NODE_AGENT_ERROR_CATALOGUE[code], message, options);
  }
}
