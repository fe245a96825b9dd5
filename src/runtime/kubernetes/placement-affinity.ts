/**
 * Where the scheduler should like to put a worker's pod (docs/kubernetes.md, "Placement: spread an endpoint, pack
 * the rest"): away from nodes that run its own endpoint's workers, so that one node's loss or drain takes only part of
 * an endpoint; otherwise onto nodes that already run other Corral workers, so that GPUs are used node by node and whole
 * nodes stay free for workers that need many GPUs. Both are preferences (the scheduler's InterPodAffinity score),
 * never requirements: a pod that fits only beside its own endpoint's workers still runs. Pure.
 */
import { LABELS } from '../types.js';
import { labelValue } from './names.js';
import type { WeightedPodAffinityTerm } from './objects.js';

/** The pods on one node count together: the node is the failure domain and the unit that GPUs fill. */
export const NODE_TOPOLOGY_KEY = 'kubernetes.io/hostname';
/** Per worker of the same endpoint on a node: strong enough that spreading wins over packing until a node holds
 * ten times more workers of other endpoints than of this one. */
export const SPREAD_WEIGHT = 100;
/** Per worker of another endpoint on a node. */
export const PACK_WEIGHT = 10;

export interface PlacementAffinity {
  podAffinity: { preferredDuringSchedulingIgnoredDuringExecution: WeightedPodAffinityTerm[] };
  podAntiAffinity: { preferredDuringSchedulingIgnoredDuringExecution: WeightedPodAffinityTerm[] };
}

/** The pod's preferences for an endpoint's worker (the label values as the pods carry them, folded to fit). */
export function placementAffinity(endpointId: string): PlacementAffinity {
  const endpoint = labelValue(endpointId);
  return {
    podAntiAffinity: {
      preferredDuringSchedulingIgnoredDuringExecution: [
        {
          weight: SPREAD_WEIGHT,
          podAffinityTerm: {
            topologyKey: NODE_TOPOLOGY_KEY,
            labelSelector: { matchLabels: { [LABELS.managed]: 'true', [LABELS.endpoint]: endpoint } },
          },
        },
      ],
    },
    podAffinity: {
      preferredDuringSchedulingIgnoredDuringExecution: [
        {
          weight: PACK_WEIGHT,
          podAffinityTerm: {
            topologyKey: NODE_TOPOLOGY_KEY,
            labelSelector: {
              matchLabels: { [LABELS.managed]: 'true' },
              matchExpressions: [{ key: LABELS.endpoint, operator: 'NotIn', values: [endpoint] }],
            },
          },
        },
      ],
    },
  };
}
