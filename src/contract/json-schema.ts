/**
 * The JSON Schemas of the request bodies, generated from the zod schemas that parse them. The parsing schemas
 * register themselves here with an id (one component of the OpenAPI document each) and a description; where a
 * preprocess step accepts more than the schema after it (numeric strings for integers, a one-element array for an
 * object), the schema names the wider wire form too, since zod sees only the schema after the step.
 */
import { z } from 'zod';

export type JsonSchema = Record<string, unknown>;

/** What the document says of a schema beyond its shape. `default` documents what an omitted key becomes. */
export interface WireMeta {
  id?: string;
  description?: string;
  default?: unknown;
  /** Checks the domain makes of a text field after parsing (domain/validate.ts), stated for clients. */
  pattern?: string;
  maxLength?: number;
}

const registry = z.registry<WireMeta>();
const wireForms = new WeakMap<object, (json: JsonSchema) => JsonSchema>();

/** Registers a request schema's id, description or documented default; returns the same schema. */
export function documented<T extends z.ZodType>(schema: T, meta: WireMeta): T {
  registry.add(schema, meta);
  return schema;
}

/** Records that a (preprocessed) schema accepts more than its JSON Schema says; returns the same schema. */
export function widened<T extends z.ZodType>(schema: T, widen: (json: JsonSchema) => JsonSchema): T {
  wireForms.set(schema, widen);
  return schema;
}

export const componentRef = (id: string): string => `#/components/schemas/${id}`;

/** Every registered request schema with an id, as OpenAPI 3.1 components (JSON Schema 2020-12). */
export function requestJsonSchemas(): Record<string, JsonSchema> {
  const { schemas } = z.toJSONSchema(registry, {
    io: 'input',
    metadata: registry,
    uri: componentRef,
    override: ({ zodSchema, jsonSchema }) => {
      // zod drops a default from the input side of a transform; the document states what an omitted key becomes.
      const meta = registry.get(zodSchema);
      if (meta?.default !== undefined) jsonSchema.default = meta.default;
      const widen = wireForms.get(zodSchema);
      if (widen) replace(jsonSchema, widenShape(jsonSchema, widen));
    },
  });
  if ('__shared' in schemas) throw new Error('a request schema is shared without an id: give it one');
  return Object.fromEntries(
    Object.entries(schemas).map(([id, { $schema: _schema, $id: _id, ...schema }]) => [id, schema]),
  );
}

/** The wider wire form around a schema's shape; its description and default stay on the outside. */
function widenShape(json: JsonSchema, widen: (json: JsonSchema) => JsonSchema): JsonSchema {
  const { id: _id, description, default: defaultValue, ...shape } = json;
  return {
    ...(description === undefined ? {} : { description }),
    ...(defaultValue === undefined ? {} : { default: defaultValue }),
    ...widen(shape),
  };
}

function replace(target: JsonSchema, source: JsonSchema): void {
  for (const key of Object.keys(target)) delete target[key];
  Object.assign(target, source);
}
