/**
 * The base URL a worker reaches Corral's worker-facing listener at (the jobs core builds the RUNPOD_WEBHOOK_* URLs
 * on it), by runtime. Pure. Docker: the listener network's gateway address, which every worker network reaches
 * (runtime/docker/listener-network.ts); local: loopback, workers are host processes; Kubernetes: the Service in
 * front of the replicas (deploy/kubernetes/services.yaml), so a worker reaches whichever replica answers.
 */

export type WorkerFacingTarget =
  | { runtime: 'docker' | 'local' | 'fake'; address: string; port: number }
  | { runtime: 'kubernetes'; service: string; namespace: string; port: number };

/** The Service of deploy/kubernetes/services.yaml and its port. */
export const KUBERNETES_WORKER_SERVICE = {
  service: 'corral-workers',
  namespace: 'corral',
  port: 8082,
} as const;

export function workerFacingBaseUrl(target: WorkerFacingTarget): string {
  if (target.runtime === 'kubernetes')
    return `http://${target.service}.${target.namespace}.svc:${target.port}`;
  // A listener on every address (0.0.0.0, ::) is reached by workers at loopback only when they are host processes.
  const wildcard = target.address === '0.0.0.0' || target.address === '::';
  const address = target.runtime === 'local' && wildcard ? '127.0.0.1' : target.address;
  const host = address.includes(':') ? `[${address}]` : address;
  return `http://${host}:${target.port}`;
}
