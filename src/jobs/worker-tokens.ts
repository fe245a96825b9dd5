/**
 * Worker tokens (`RUNPOD_AI_API_KEY`): an HMAC of the endpoint id and the worker id under a server secret that the
 * store keeps (store/server-secrets.ts), so that any replica verifies any worker's token without a lookup. A token
 * is good only for its own endpoint and worker; it is never an API key (its `cwt_` form is not one, and the client
 * routes refuse it), and an API key is never a worker token.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

const PREFIX = 'cwt_';

export class WorkerTokens {
  readonly #secret: Buffer;

  constructor(options: { secret: string }) {
    this.#secret = Buffer.from(options.secret, 'utf8');
  }

  issue(endpointId: string, workerId: string): string {
    return PREFIX + this.#mac(endpointId, workerId).toString('base64url');
  }

  /** Whether `presented` (raw or `Bearer ...`) is the token of this endpoint's worker. */
  verify(presented: string | undefined, endpointId: string, workerId: string): boolean {
    if (presented === undefined) return false;
    const token = presented.replace(/^Bearer\s+/i, '').trim();
    if (!token.startsWith(PREFIX)) return false;
    const given = Buffer.from(token.slice(PREFIX.length), 'base64url');
    const expected = this.#mac(endpointId, workerId);
    return given.length === expected.length && timingSafeEqual(given, expected);
  }

  #mac(endpointId: string, workerId: string): Buffer {
    return createHmac('sha256', this.#secret).update(`${endpointId}\n${workerId}`).digest();
  }
}

/** Whether a presented key has the worker token's form (refused as a client key). */
export function isWorkerToken(presented: string): boolean {
  return presented
    .replace(/^Bearer\s+/i, '')
    .trim()
    .startsWith(PREFIX);
}
