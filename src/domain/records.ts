/**
 * Records read and written by the store and answered by the contract and the API: plain shapes with no behaviour,
 * here so that contract/ and api/ need not import store/.
 */

export interface ApiKeyRecord {
  id: string;
  ownerId: string;
  name: string;
  secretHash: string;
  admin: boolean;
  createdAt: number;
  revokedAt: number | null;
  lastUsedAt: number | null;
}

export interface InvokeKeyRecord {
  id: string;
  endpointId: string;
  ownerId: string;
  name: string;
  secretHash: string;
  createdAt: number;
  revokedAt: number | null;
}

export interface Page {
  limit: number;
  offset: number;
}

export interface ReplicaBeat {
  id: string;
  host: string;
  pid: number;
  apiUrl: string;
  /** Where its gateway can be reached by the other replicas (a gateway forwards requests there); absent: unknown. */
  gatewayUrl?: string;
  /** Its gateway's requests in flight and queued now. */
  inFlight: number;
  queued: number;
  /** The membership for which it keeps within its share of each worker's slots (cluster/slot-shares.ts). */
  settled?: string | null;
}

export interface Replica extends ReplicaBeat {
  startedAt: number;
  lastSeenAt: number;
}

/**
 * Every kind of event an endpoint's log records: the API's changes (created, updated, stopped, started, deleted)
 * and the controller's `state` changes, exits of its workers (`crashed`, out of memory among them), workers it
 * failed (`failed`), the causes of failing health probes (`health`) and frozen workers moved down to free their GPUs
 * for another endpoint (`eviction`, in both endpoints' logs), and maxWorkers lowered by the owner's idle policy
 * (`idle-policy`). docs/api.md describes each (a test checks the list).
 */
export const ENDPOINT_EVENT_TYPES = [
  'created',
  'updated',
  'stopped',
  'started',
  'deleted',
  'state',
  'crashed',
  'failed',
  'health',
  'eviction',
  'idle-policy',
] as const;

export type EndpointEventType = (typeof ENDPOINT_EVENT_TYPES)[number];

export interface NewEvent {
  at: number;
  type: EndpointEventType;
  message: string;
  data?: Record<string, unknown>;
}

/** A recorded event. Its type is read as a plain string: a newer server sharing the database may know more. */
export interface StoredEvent extends Omit<Required<NewEvent>, 'type'> {
  id: number;
  type: string;
}
