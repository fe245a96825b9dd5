import { API_PREFIX } from './prefix.js';

/** Builds the URLs an endpoint shows: its own URL on the gateway and its log on the API. */
export class EndpointLinks {
  readonly #o: { domain: string; gatewayPort: number; publicUrl: string | undefined; apiUrl: string };

  constructor(options: {
    domain: string;
    gatewayPort: number;
    publicUrl: string | undefined;
    apiUrl: string;
  }) {
    this.#o = options;
  }

  url(appName: string): string {
    const { publicUrl, domain, gatewayPort } = this.#o;
    if (publicUrl) {
      const base = new URL(publicUrl);
      return `${base.protocol}//${appName}.${base.host}`;
    }
    return `http://${appName}.${domain}:${gatewayPort}`;
  }

  log(endpointId: string): string {
    return `${this.#o.apiUrl}${API_PREFIX}/endpoint/log?id=${encodeURIComponent(endpointId)}`;
  }

  workerLog(endpointId: string, workerId: string): string {
    return `${this.#o.apiUrl}${API_PREFIX}/endpoint/worker/log?id=${encodeURIComponent(endpointId)}&worker=${encodeURIComponent(workerId)}`;
  }

  workerMetrics(endpointId: string, workerId: string): string {
    return `${this.#o.apiUrl}${API_PREFIX}/endpoint/worker/metrics?id=${encodeURIComponent(endpointId)}&worker=${encodeURIComponent(workerId)}`;
  }
}
