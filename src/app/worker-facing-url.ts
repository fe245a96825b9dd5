/**
 * The base URL a worker reaches Corral's worker-facing listener at (the jobs core builds the RUNPOD_WEBHOOK_* URLs
 * on it), by runtime. Pure. Docker: the listener network's gateway address, which every worker network reaches
 * (runtime/docker/listener-network.ts); local: loopback, workers are host processes; Kubernetes: the Service in
 * front of the replicas (deploy/kubernetes/services.yaml), so a worker reaches whichever replica answers.
 */
import { formatHostPort } from '../config/config.js';
import type { HostPort } from '../config/settings.js';
import { hostKind } from '../net/address-kind.js';

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

/** A host as a URL or a listen setting writes it (an IPv6 address in brackets or not). */
function isLoopbackHost(host: string): boolean {
  return hostKind(host.replace(/^\[(.*)\]$/, '$1').toLowerCase()) === 'loopback';
}

/**
 * The base URL workers get on Kubernetes: the one advertised, else the `corral-workers` Service (by cluster DNS)
 * when the listener is on the pod network, else the listener's own loopback address (which no pod reaches:
 * `kubernetesWorkersUnreachable` says so).
 */
export function kubernetesWorkersUrl(options: {
  listen: HostPort;
  advertiseUrl?: string | undefined;
}): string {
  if (options.advertiseUrl !== undefined) return options.advertiseUrl;
  if (isLoopbackHost(options.listen.host))
    return workerFacingBaseUrl({ runtime: 'local', address: options.listen.host, port: options.listen.port });
  return workerFacingBaseUrl({ runtime: 'kubernetes', ...KUBERNETES_WORKER_SERVICE });
}

/**
 * Why a worker's pod cannot reach the worker-facing listener (so queue endpoints cannot work), undefined when it
 * can as far as the settings tell: a listener on a loopback address, or a loopback URL, is out of every pod's reach.
 */
export function kubernetesWorkersUnreachable(options: {
  listen: HostPort;
  advertiseUrl?: string | undefined;
}): string | undefined {
  const fix =
    'set workers.listen (CORRAL_WORKERS_ADDR) to 0.0.0.0:8082 and, outside the shipped manifests, ' +
    'CORRAL_ADVERTISE_WORKERS_URL to where pods reach it (docs/kubernetes.md)';
  if (isLoopbackHost(options.listen.host)) {
    return `the worker-facing listener is on ${formatHostPort(options.listen)}, a loopback address no pod reaches: ${fix}`;
  }
  const url = kubernetesWorkersUrl(options);
  let host: string;
  try {
    host = new URL(url).hostname;
  } catch {
    return `the worker-facing URL ${url} is not a URL: ${fix}`;
  }
  if (isLoopbackHost(host))
    return `the worker-facing URL ${url} is a loopback address no pod reaches: ${fix}`;
  return undefined;
}
