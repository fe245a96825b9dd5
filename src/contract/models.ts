/**
 * `GET models`' wire body (Corral's own, issue 34): the models in Corral's machine's cache and, on Kubernetes with
 * node agents, in each GPU node's, one entry per revision per machine; times as ISO 8601. `POST models` answers one
 * `WireCachedModel` and takes a `WireModelPull` (one item of an endpoint's `models`).
 */
import type { WireModel } from './wire.js';

/** The body of `POST models`: an endpoint's model, `revision` (`main`), `allowPatterns` and `tokenSecret` optional. */
export type WireModelPull = Pick<WireModel, 'name'> & Partial<Omit<WireModel, 'name'>>;

export interface WireModelUser {
  endpointId: string;
  endpointName: string;
}

export interface WireCachedModel {
  /** `org/name`, as on the hub. */
  name: string;
  /** The GPU node whose cache holds this copy (Kubernetes with node agents); null: Corral's own machine's cache. */
  machine: string | null;
  /** The branch, tag or `refs/pr/N` that points to the commit here (the commit itself when none does). */
  revision: string;
  commit: string;
  files: number;
  /** Bytes of this revision's files. */
  bytes: number;
  /** Bytes the repository takes on disk, every revision's blobs counted once. */
  diskBytes: number;
  lastUsedAt: string;
  /** The endpoints (the caller's own; every owner's for an admin key) that name the model. */
  endpoints: WireModelUser[];
  /** A download under way, or null. */
  download: { bytesDone: number; bytesTotal: number; bytesPerSecond: number } | null;
}

export interface WireModels {
  scope: 'all' | 'own';
  models: WireCachedModel[];
}
