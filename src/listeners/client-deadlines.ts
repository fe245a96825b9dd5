/**
 * The deadlines node:http holds a client connection to, shared by the API's and the gateway's servers: a request's
 * head, an idle keep-alive, the requests one connection carries, and how often node looks for connections past
 * their deadline.
 */

/** One listener's deadlines (config: `connections.api`, `connections.gateway`). */
export interface ClientDeadlines {
  /** A request's whole head, from the connection or the previous request. */
  headersTimeoutMs: number;
  /** An idle keep-alive connection. */
  keepAliveTimeoutMs: number;
  /** Requests one connection may carry; 0: no limit. */
  maxRequestsPerSocket: number;
}

/**
 * How often node looks for connections past their head or request deadline (its default, 30 s, would let an idle
 * connection outlive a 10 s head deadline four times over). One pass walks the open connections.
 */
export const CONNECTIONS_CHECKING_INTERVAL_MS = 1_000;
