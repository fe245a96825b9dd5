/**
 * The URLs shown with an endpoint: its own on the gateway, its jobs API's (`/v2/...`, also on the gateway), its log
 * and metrics (and its workers') on the API.
 */
import { API_PREFIX } from '../contract/paths.js';
import type { WireJobUrls } from '../contract/wire.js';

/** Ports and URLs are read when a link is made: with port 0 they are known only once the servers listen. */
export interface LinkOptions {
  domain: string;
  gatewayPort: () => number;
  publicUrl: string | undefined;
  apiUrl: () => string;
}

/** Builds the URLs an endpoint shows: its own URL on the gateway, its log and its metrics on the API. */
export class EndpointLinks {
  readonly #o: LinkOptions;

  constructor(options: LinkOptions) {
    this.#o = options;
  }

  url(appName: string): string {
    const { publicUrl, domain, gatewayPort } = this.#o;
    if (publicUrl) {
      const base = new URL(publicUrl);
      return `${base.protocol}//${appName}.${base.host}`;
    }
    return `http://${appName}.${domain}:${gatewayPort()}`;
  }

  /**
   * Where the gateway serves the jobs API (`/v2/...` on a Host that is not an endpoint's): the public base's origin,
   * else `hostname` (the name a client reached the API by) on the gateway's port.
   */
  gatewayBase(hostname: string): string {
    const { publicUrl, gatewayPort } = this.#o;
    if (publicUrl) return new URL(publicUrl).origin;
    return `http://${hostname.includes(':') && !hostname.startsWith('[') ? `[${hostname}]` : hostname}:${gatewayPort()}`;
  }

  /**
   * The endpoint's jobs API (docs/jobs.md) at `gatewayBase(hostname)`, named by its id (the first a `/v2` name is
   * resolved as: never another endpoint's). What a queue endpoint is called at; an http endpoint takes jobs too.
   */
  jobUrls(endpointId: string, hostname: string): WireJobUrls {
    const base = `${this.gatewayBase(hostname)}/v2/${encodeURIComponent(endpointId)}`;
    return {
      run: `${base}/run`,
      runsync: `${base}/runsync`,
      status: `${base}/status/{jobId}`,
      health: `${base}/health`,
    };
  }

  log(endpointId: string): string {
    return `${this.#o.apiUrl()}${API_PREFIX}/endpoint/log?id=${encodeURIComponent(endpointId)}`;
  }

  metrics(endpointId: string): string {
    return `${this.#o.apiUrl()}${API_PREFIX}/endpoint/metrics?id=${encodeURIComponent(endpointId)}`;
  }

  workerLog(endpointId: string, workerId: string): string {
    return `${this.#o.apiUrl()}${API_PREFIX}/endpoint/worker/log?id=${encodeURIComponent(endpointId)}&worker=${encodeURIComponent(workerId)}`;
  }

  workerMetrics(endpointId: string, workerId: string): string {
    return `${this.#o.apiUrl()}${API_PREFIX}/endpoint/worker/metrics?id=${encodeURIComponent(endpointId)}&worker=${encodeURIComponent(workerId)}`;
  }
}
