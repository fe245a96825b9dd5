/** `GET gpus`' wire body (Corral's own): the inventory, who holds each GPU, the workers waiting; times as ISO 8601. */
export interface WireGpuHolder {
  workerId: string;
  /** Empty for a worker being removed (its container still holds the GPU). */
  endpointId: string;
  endpointName: string;
  ownerId: string;
  /** The worker's state, or `removing` while its container is being removed. */
  state: string;
}

export interface WireGpu {
  index: number;
  uuid: string;
  productId: string;
  model: string;
  memoryGB: number;
  simulated: boolean;
  /** Present where the cluster has several nodes (Kubernetes). */
  node?: string;
  busy: boolean;
  /** Null when free, or when held by a worker of another owner (which only an admin sees). */
  heldBy: WireGpuHolder | null;
}

export interface WireWaitingWorker {
  workerId: string;
  endpointId: string;
  endpointName: string;
  ownerId: string;
  since: string;
  gpuCount: number;
  productIds: string[];
  reason: string;
}

export interface WireGpus {
  scope: 'all' | 'own';
  gpus: WireGpu[];
  waiting: WireWaitingWorker[];
}
