/**
 * The one base of every error Corral answers over HTTP, the API's and the gateway's alike (undici's habit: one
 * class per failure kind, each with a stable `code`), and the wire shape they all share.
 */

/** One entry of an error catalogue: the HTTP status its code is answered with, and what the code means. */
export interface CatalogueEntry {
  readonly status: number;
  readonly description: string;
}

/** The body of every error answer: `code` is the HTTP status, `reason` the stable UPPER_SNAKE code. */
export interface ErrorBody {
  code: number;
  reason: string;
  message: string;
  metadata: Record<string, unknown>;
}

export interface CorralErrorOptions {
  metadata?: Record<string, unknown>;
  cause?: unknown;
}

/**
 * An error with a stable UPPER_SNAKE `code` from one of the catalogues (api-catalogue.ts, gateway-catalogue.ts)
 * and the HTTP `status` that code is answered with. Clients and dashboards match on the code: never rename one.
 */
export abstract class CorralError<Code extends string = string> extends Error {
  readonly code: Code;
  readonly status: number;
  readonly metadata: Record<string, unknown>;

  constructor(code: Code, entry: CatalogueEntry, message: string, options: CorralErrorOptions = {}) {
    // No `cause` key at all when there is none, so that a logged error shows no `cause: undefined`.
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.status = entry.status;
    this.metadata = options.metadata ?? {};
  }

  /** The answer's body, in the format both the API and the gateway send. */
  toBody(): ErrorBody {
    return { code: this.status, reason: this.code, message: this.message, metadata: this.metadata };
  }
}
