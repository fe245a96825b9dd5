/** Endpoint log events in their wire shape, with the domain's field names given as the wire keys clients know. */
import type { EndpointSpec } from '../domain/endpoint.js';
import type { StoredEvent } from '../domain/records.js';
import { WIRE_SPEC_FIELDS } from './fields.js';
import type { WireEvent } from './wire.js';

/**
 * An event of the endpoint log as clients see it. `updated` events record the domain's field names (`workers`,
 * `env`); clients know them by their wire keys (`workerConfig`, `envs`), so `data.fields` and the message that
 * lists them are given in wire keys. Events written that way by older versions read the same.
 */
export function toWireEvent(event: StoredEvent): WireEvent {
  const wire: WireEvent = {
    id: event.id,
    at: new Date(event.at).toISOString(),
    type: event.type,
    message: event.message,
    data: event.data,
  };
  const fields = event.data.fields;
  if (event.type !== 'updated' || !Array.isArray(fields)) return wire;
  const names = fields.map((field) => (typeof field === 'string' ? wireKey(field) : field));
  const message =
    event.message === `updated ${fields.join(', ')}` ? `updated ${names.join(', ')}` : event.message;
  return { ...wire, message, data: { ...event.data, fields: names } };
}

function wireKey(field: string): string {
  return Object.hasOwn(WIRE_SPEC_FIELDS, field) ? WIRE_SPEC_FIELDS[field as keyof EndpointSpec] : field;
}
