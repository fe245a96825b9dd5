/**
 * RunPod's OpenAI route on http endpoints: `/v2/{endpoint}/openai/v1/...` for an endpoint whose workers serve
 * OpenAI's API themselves (vLLM, SGLang, TGI, llama.cpp servers). The request goes to the endpoint's workers as
 * `/v1/...`, through the same path as a request to the endpoint's URL (keys, queue, wake, streaming, counts), so a
 * client moves between a queue endpoint (where the route makes jobs: jobs/openai-routes.ts) and an http one by its
 * base URL alone. Claimed by the endpoint's id or appName as the routing view knows it; anything else (a queue
 * endpoint, a name, an endpoint the view does not hold yet) is left to the jobs API.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RoutingView } from '../ports/routing-view.js';
import { appNameFromHost } from './host.js';
import type { GatewayRoute } from './router.js';

const OPENAI = /^\/v2\/([^/?]+)\/openai(?=[/?]|$)/;

export interface OpenAIPassthroughOptions {
  routing: Pick<RoutingView, 'endpointById' | 'endpointByAppName'>;
  domain: string;
  /** The endpoints' request path, which serves the request once it names its endpoint in the path form. */
  endpoints: (req: IncomingMessage, res: ServerResponse) => void;
}

export class OpenAIPassthrough implements GatewayRoute {
  readonly #o: OpenAIPassthroughOptions;

  constructor(options: OpenAIPassthroughOptions) {
    this.#o = options;
  }

  /** The endpoint's appName for a request to an http endpoint's OpenAI route, else undefined. */
  #appName(req: IncomingMessage): string | undefined {
    const match = OPENAI.exec(req.url ?? '');
    if (match === null) return undefined;
    // On an endpoint's own Host, `/v2/...` is the endpoint's path, as for the jobs API.
    if (appNameFromHost(req.headers.host, this.#o.domain) !== undefined) return undefined;
    // Ids and appNames need no escapes: a ref with one is no endpoint the view holds by either.
    const ref = match[1] ?? '';
    const endpoint =
      this.#o.routing.endpointById(ref) ?? this.#o.routing.endpointByAppName(ref.toLowerCase());
    return endpoint?.spec.type === 'http' ? endpoint.spec.appName : undefined;
  }

  /** The request `claims` took last, with its endpoint's appName: the router hands it to `handleRequest` at once. */
  #claimed: { req: IncomingMessage; appName: string } | undefined;

  readonly claims = (req: IncomingMessage): boolean => {
    const appName = this.#appName(req);
    if (appName === undefined) return false;
    this.#claimed = { req, appName };
    return true;
  };

  readonly handleRequest = (req: IncomingMessage, res: ServerResponse): void => {
    const claimed = this.#claimed;
    this.#claimed = undefined;
    // Resolved once: by `claims` just before, or here for a caller that did not ask it.
    const appName = (claimed?.req === req ? claimed.appName : this.#appName(req)) as string;
    const url = req.url ?? '';
    // The path form: the request path strips `/e/{appName}` and the worker sees `/v1/...`.
    req.url = `/e/${appName}${url.replace(OPENAI, '') || '/'}`;
    this.#o.endpoints(req, res);
  };
}
