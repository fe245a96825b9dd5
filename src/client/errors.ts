/**
 * The errors the client throws. Their base, `CorralClientError`, lets callers catch them all at once; the
 * server's own error classes (src/errors/) are a different family, never thrown by the client.
 */

/** Base class of every error the client throws, so callers can catch them all at once. */
export class CorralClientError extends Error {
  override name = 'CorralClientError';
}

/** The server answered with a non-2xx status; fields come from its `{code, reason, message, metadata}` body. */
export class CorralApiError extends CorralClientError {
  override name = 'CorralApiError';
  readonly status: number;
  readonly reason: string;
  readonly metadata: Record<string, unknown>;

  constructor(status: number, reason: string, message: string, metadata: Record<string, unknown> = {}) {
    super(message);
    this.status = status;
    this.reason = reason;
    this.metadata = metadata;
  }

  /** The request field a validation error names (`metadata.field`), if any. */
  get field(): string | undefined {
    const field = this.metadata.field;
    return typeof field === 'string' && field !== '' ? field : undefined;
  }
}

/** The request never got an HTTP answer: connection refused, DNS failure, TLS error, timeout. */
export class CorralConnectionError extends CorralClientError {
  override name = 'CorralConnectionError';
  readonly baseUrl: string;
  readonly timedOut: boolean;

  constructor(baseUrl: string, message: string, options: { cause?: unknown; timedOut?: boolean } = {}) {
    super(message, { cause: options.cause });
    this.baseUrl = baseUrl;
    this.timedOut = options.timedOut ?? false;
  }
}

/** The server answered 2xx but the body is not the JSON shape this operation returns. */
export class CorralProtocolError extends CorralClientError {
  override name = 'CorralProtocolError';
}
