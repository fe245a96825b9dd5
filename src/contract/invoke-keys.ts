/**
 * The invoke-key operations on the wire (a Corral extension): their request bodies, read into plain values, and
 * the listed form of a key (never the key itself, except once in the create answer).
 */
import type { InvokeKeyRecord } from '../domain/records.js';
import { readId } from './endpoint-input.js';
import type { WireInvokeKey } from './wire.js';

export const MAX_INVOKE_KEY_NAME_LENGTH = 100;

/** What a create or delete body says, or the field that is missing or wrong. */
export type InvokeKeyBody<T> = { ok: true; value: T } | { ok: false; field: string; message: string };

/** `{"id": <endpoint id>, "name"?: <label>}`. */
export function parseCreateInvokeKey(body: unknown): InvokeKeyBody<{ endpointId: string; name: string }> {
  const endpointId = readId(body, ['id', 'endpoint_id']);
  if (endpointId === undefined)
    return { ok: false, field: 'id', message: 'the body needs {"id": "<endpoint id>"}' };
  const name = (body as Record<string, unknown>).name ?? '';
  if (typeof name !== 'string' || name.length > MAX_INVOKE_KEY_NAME_LENGTH) {
    return {
      ok: false,
      field: 'name',
      message: `name must be a string of at most ${MAX_INVOKE_KEY_NAME_LENGTH} characters`,
    };
  }
  return { ok: true, value: { endpointId, name } };
}

/** `{"id": <endpoint id>, "keyId": <invoke key id>}`. */
export function parseDeleteInvokeKey(body: unknown): InvokeKeyBody<{ endpointId: string; keyId: string }> {
  const endpointId = readId(body, ['id', 'endpoint_id']);
  if (endpointId === undefined)
    return { ok: false, field: 'id', message: 'the body needs {"id": "<endpoint id>", "keyId": "..."}' };
  const keyId = readId(body, ['keyId']);
  if (keyId === undefined)
    return { ok: false, field: 'keyId', message: 'the body needs {"id": "<endpoint id>", "keyId": "..."}' };
  return { ok: true, value: { endpointId, keyId } };
}

export function toWireInvokeKey(key: Omit<InvokeKeyRecord, 'secretHash'>): WireInvokeKey {
  return {
    id: key.id,
    endpointId: key.endpointId,
    name: key.name,
    createdAt: new Date(key.createdAt).toISOString(),
    revokedAt: key.revokedAt === null ? null : new Date(key.revokedAt).toISOString(),
  };
}
