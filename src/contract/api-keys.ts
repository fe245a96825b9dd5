/**
 * The API-key operations on the wire (Corral's own, admin keys only): their request bodies, read into plain
 * values, and the listed form of a key: never its secret nor its hash, except the secret once in the create answer.
 */
import type { ApiKeyRecord } from '../domain/records.js';
import { readId } from './endpoint-input.js';
import type { InvokeKeyBody } from './invoke-keys.js';

export const MAX_API_KEY_NAME_LENGTH = 200;
/** An owner id: printable ASCII without spaces, as X-Corral-Owner carries it. */
const OWNER_ID = /^[\x21-\x7e]{1,128}$/;

export interface WireApiKey {
  id: string;
  name: string;
  ownerId: string;
  admin: boolean;
  createdAt: string;
  /** When a request last used it (recorded at most once a minute); null: never. */
  lastUsedAt: string | null;
  /** When it was revoked; null: it is active. */
  revokedAt: string | null;
}

export interface WireNewApiKey extends WireApiKey {
  /** The key itself: in this answer only, never again. */
  key: string;
}

export interface NewApiKeyInput {
  name: string;
  /** Absent: the caller's own owner. */
  ownerId?: string;
  admin: boolean;
}

/** `{"name"?: <label>, "ownerId"?: <owner>, "admin"?: <bool>}`. */
export function parseCreateApiKey(body: unknown): InvokeKeyBody<NewApiKeyInput> {
  const fields = (body ?? {}) as Record<string, unknown>;
  if (typeof fields !== 'object' || Array.isArray(fields))
    return { ok: false, field: 'name', message: 'the body must be an object' };
  const name = fields.name ?? '';
  if (typeof name !== 'string' || name.length > MAX_API_KEY_NAME_LENGTH) {
    return {
      ok: false,
      field: 'name',
      message: `name must be a string of at most ${MAX_API_KEY_NAME_LENGTH} characters`,
    };
  }
  const ownerId = fields.ownerId ?? undefined;
  if (ownerId !== undefined && (typeof ownerId !== 'string' || !OWNER_ID.test(ownerId))) {
    return {
      ok: false,
      field: 'ownerId',
      message: 'ownerId must be 1 to 128 printable ASCII characters without spaces',
    };
  }
  const admin = fields.admin ?? false;
  if (typeof admin !== 'boolean')
    return { ok: false, field: 'admin', message: 'admin must be true or false' };
  return { ok: true, value: { name, admin, ...(ownerId === undefined ? {} : { ownerId }) } };
}

/** `{"id": <API key id>}`. */
export function parseDeleteApiKey(body: unknown): InvokeKeyBody<{ id: string }> {
  const id = readId(body, ['id']);
  if (id === undefined) return { ok: false, field: 'id', message: 'the body needs {"id": "<API key id>"}' };
  return { ok: true, value: { id } };
}

export function toWireApiKey(record: ApiKeyRecord): WireApiKey {
  const iso = (at: number | null) => (at === null ? null : new Date(at).toISOString());
  return {
    id: record.id,
    name: record.name,
    ownerId: record.ownerId,
    admin: record.admin,
    createdAt: new Date(record.createdAt).toISOString(),
    lastUsedAt: iso(record.lastUsedAt),
    revokedAt: iso(record.revokedAt),
  };
}
