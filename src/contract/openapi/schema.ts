/** Small builders of JSON Schema objects for the hand-written parts of the OpenAPI document. */

import { componentRef } from '../json-schema.js';

export type Schema = Record<string, unknown>;

export const ref = (name: string): Schema => ({ $ref: componentRef(name) });

const withDescription = (schema: Schema, description?: string): Schema =>
  description === undefined ? schema : { ...schema, description };

export const str = (description?: string, extra: Schema = {}): Schema =>
  withDescription({ type: 'string', ...extra }, description);

export const int = (description?: string, extra: Schema = {}): Schema =>
  withDescription({ type: 'integer', ...extra }, description);

export const bool = (description?: string): Schema => withDescription({ type: 'boolean' }, description);

export const arrayOf = (items: Schema, description?: string, extra: Schema = {}): Schema =>
  withDescription({ type: 'array', items, ...extra }, description);

/** An object schema; every property is required unless `optional` names it. */
export const object = (
  properties: Record<string, Schema>,
  options: { optional?: string[]; required?: string[]; description?: string } = {},
): Schema => {
  const required =
    options.required ?? Object.keys(properties).filter((key) => !options.optional?.includes(key));
  return withDescription(
    { type: 'object', properties, ...(required.length > 0 ? { required } : {}) },
    options.description,
  );
};
