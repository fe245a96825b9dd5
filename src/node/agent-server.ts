/**
 * The node agent's HTTP server (`corral node`): the protocol of runtime/kubernetes/node-agent-protocol.ts over
 * pod-tiers.ts, and the node's model cache (model-routes.ts). Every call must carry the shared bearer token (compared
 * in constant time, never logged); a pod is named by its UID. The one body read is a model ensure's (it carries the
 * owner's hub token: model-routes.ts reads it, bounded); every other parameter is in the path or the query.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { bearerMatches, tokenDigest } from '../crypto/bearer-token.js';
import { NodeAgentError } from '../errors/node-agent-catalogue.js';
import {
  NODE_AGENT_PATHS,
  type NodeAgentStatus,
  type PodTierMove,
} from '../runtime/kubernetes/node-agent-protocol.js';
import { modelRoute, type NodeModels } from './model-routes.js';
import type { PodTiers } from './pod-tiers.js';

export interface NodeAgentServerOptions {
  tiers: PodTiers;
  /** The shared bearer token (the Secret both the agent and Corral mount). */
  token: string;
  logger: Logger;
  /** The node's model cache; absent: the model calls answer NODE_AGENT_NO_ROUTE. */
  models?: NodeModels;
}

const MOVES: readonly PodTierMove[] = ['freeze', 'thaw', 'suspend', 'restore'];
/** A suspend's or a restore's deadline when the caller names none. */
const DEFAULT_CHECKPOINT_DEADLINE_MS = 120_000;

function deadlineOf(url: URL): number {
  const text = url.searchParams.get('deadlineMs');
  if (text === null) return DEFAULT_CHECKPOINT_DEADLINE_MS;
  const value = Number(text);
  if (!Number.isInteger(value) || value <= 0)
    throw new NodeAgentError('NODE_AGENT_BAD_REQUEST', `deadlineMs must be a positive integer, not ${text}`);
  return value;
}

export class NodeAgentServer {
  readonly #o: NodeAgentServerOptions;
  readonly #token: Buffer;
  readonly #server: http.Server;

  constructor(options: NodeAgentServerOptions) {
    this.#o = options;
    this.#token = tokenDigest(options.token);
    this.#server = http.createServer((request, response) => {
      void this.#answer(request, response);
    });
  }

  listen(host: string, port: number): Promise<AddressInfo> {
    return new Promise((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(port, host, () => {
        this.#server.off('error', reject);
        resolve(this.#server.address() as AddressInfo);
      });
    });
  }

  close(): Promise<void> {
    this.#server.closeAllConnections();
    return new Promise((resolve) => this.#server.close(() => resolve()));
  }

  async #answer(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    const started = performance.now();
    const url = new URL(request.url ?? '/', 'http://agent');
    try {
      if (!bearerMatches(request.headers.authorization, this.#token))
        throw new NodeAgentError(
          'NODE_AGENT_UNAUTHENTICATED',
          'send "Authorization: Bearer <the agent token>"',
        );
      const method = request.method ?? 'GET';
      const body =
        (await modelRoute(this.#o.models, method, url, request)) ?? (await this.#route(method, url));
      this.#send(response, 200, body);
      const move = url.pathname.startsWith('/v1/pods/') ? url.pathname.split('/')[4] : undefined;
      if (move !== undefined)
        this.#o.logger.info(
          { path: url.pathname, ms: Math.round((performance.now() - started) * 10) / 10 },
          'pod tier move',
        );
    } catch (error) {
      const known = error instanceof NodeAgentError;
      if (!known) this.#o.logger.error({ err: error, path: url.pathname }, 'node agent call failed');
      else if (error.status >= 500)
        this.#o.logger.warn(
          { err: error, path: url.pathname },
          url.pathname.startsWith(NODE_AGENT_PATHS.models)
            ? 'model fetch on this node failed'
            : 'pod tier move failed',
        );
      const failure = known ? error : new NodeAgentError('NODE_AGENT_FREEZER_FAILED', String(error));
      this.#send(response, failure.status, failure.toBody());
    }
  }

  async #route(method: string, url: URL): Promise<unknown> {
    const parts = url.pathname.split('/').filter((part) => part !== '');
    const { tiers } = this.#o;
    if (method === 'GET' && parts.length === 2 && parts[0] === 'v1' && parts[1] === 'status') {
      const status: NodeAgentStatus = {
        cgroup: tiers.hierarchyKind,
        suspend: tiers.suspendable,
        held: tiers.held(),
      };
      return status;
    }
    if (parts[0] !== 'v1' || parts[1] !== 'pods' || parts[2] === undefined)
      throw new NodeAgentError('NODE_AGENT_NO_ROUTE', `no route ${method} ${url.pathname}`);
    const uid = decodeURIComponent(parts[2]);
    if (method === 'GET' && parts.length === 3) return tiers.state(uid);
    const move = MOVES.find((m) => m === parts[3]);
    if (method !== 'POST' || parts.length !== 4 || move === undefined)
      throw new NodeAgentError('NODE_AGENT_NO_ROUTE', `no route ${method} ${url.pathname}`);
    if (move === 'freeze') return tiers.freeze(uid);
    if (move === 'thaw') return tiers.thaw(uid);
    if (move === 'suspend') return tiers.suspend(uid, deadlineOf(url));
    return tiers.restore(uid, deadlineOf(url));
  }

  #send(response: http.ServerResponse, status: number, body: unknown): void {
    const text = JSON.stringify(body);
    response.writeHead(status, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(text),
    });
    response.end(text);
  }
}
