/**
 * Worker tokens (`RUNPOD_AI_API_KEY`): an HMAC of the endpoint id and the worker id under a server secret that the
 * store keeps (store/keys/server-secrets.ts), so that any replica verifies any worker's token without a lookup. A token
 * is good only for its own endpoint and worker; it is never an API key (its `cwt_` form is not one, and the client
 * routes refuse it), and an API key is never a worker token.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

const PREFIX = 'cwt_';
/** How many verified tokens are remembered by default (a worker sends the same token on every request). */
export const DEFAULT_VERIFIED_TOKENS = 10_000;

export class WorkerTokens {
  readonly #secret: Buffer;
  readonly #max: number;
  /**
   * Tokens already verified, each with the endpoint and worker it is good for: a worker's every request carries
   * the same token, so its HMAC is computed once. Only verified tokens enter; the oldest leaves first at the bound.
   */
  readonly #verified = new Map<string, string>();

  constructor(options: { secret: string; maxVerified?: number }) {
    this.#secret = Buffer.from(options.secret, 'utf8');
    this.#max = options.maxVerified ?? DEFAULT_VERIFIED_TOKENS;
  }

  /** How many verified tokens are remembered now. */
  get remembered(): number {
    return this.#verified.size;
  }

  issue(endpointId: string, workerId: string): string {
    return PREFIX + this.#mac(endpointId, workerId).toString('base64url');
  }

  /** Whether `presented` (raw or `Bearer ...`) is the token of this endpoint's worker. */
  verify(presented: string | undefined, endpointId: string, workerId: string): boolean {
    if (presented === undefined) return false;
    const token = presented.replace(/^Bearer\s+/i, '').trim();
    if (!token.startsWith(PREFIX)) return false;
    const holder = `${endpointId}\n${workerId}`;
    const known = this.#verified.get(token);
    if (known !== undefined) return known === holder;
    const given = Buffer.from(token.slice(PREFIX.length), 'base64url');
    const expected = this.#mac(endpointId, workerId);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return false;
    this.#verified.set(token, holder);
    if (this.#verified.size > this.#max) {
      const oldest = this.#verified.keys().next().value;
      if (oldest !== undefined) this.#verified.delete(oldest);
    }
    return true;
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
