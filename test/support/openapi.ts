/**
 * Checks of answers against the OpenAPI document (src/contract/openapi/): a small structural check of a value
 * against a schema, and the documented response schema of an operation. The API's and the jobs API's tests use it.
 */

export type Schema = Record<string, unknown>;

export interface Document {
  openapi: string;
  servers: { url: string }[];
  paths: Record<string, Record<string, Schema>>;
  components: { schemas: Record<string, Schema> };
}

/** A small structural check: types, required keys, enums and consts, following $ref, allOf and oneOf. */
export function problemsIn(doc: Document, value: unknown, schema: Schema, at = '$'): string[] {
  const problems = (v: unknown, s: Schema, where: string): string[] => problemsIn(doc, v, s, where);
  if (typeof schema.$ref === 'string') {
    const name = schema.$ref.replace('#/components/schemas/', '');
    const target = doc.components.schemas[name];
    if (!target) return [`${at}: unresolved ${schema.$ref}`];
    return problems(value, target, at);
  }
  const found: string[] = [];
  if (Array.isArray(schema.allOf)) {
    for (const part of schema.allOf as Schema[]) found.push(...problems(value, part, at));
  }
  if (Array.isArray(schema.anyOf)) {
    const matching = (schema.anyOf as Schema[]).filter((option) => problems(value, option, at).length === 0);
    if (matching.length === 0) found.push(`${at}: matches none of anyOf`);
  }
  if (Array.isArray(schema.oneOf)) {
    const matching = (schema.oneOf as Schema[]).filter((option) => problems(value, option, at).length === 0);
    if (matching.length !== 1) found.push(`${at}: matches ${matching.length} of oneOf, not exactly 1`);
  }
  if ('const' in schema && value !== schema.const) found.push(`${at}: expected ${String(schema.const)}`);
  if (Array.isArray(schema.enum) && !schema.enum.includes(value))
    found.push(`${at}: ${String(value)} not in enum`);
  if (Array.isArray(schema.type)) {
    const options = (schema.type as string[]).map((type) => problems(value, { ...schema, type }, at));
    if (!options.some((found) => found.length === 0)) found.push(...(options[0] ?? []));
    return found;
  }
  if (schema.type === 'null' && value !== null) found.push(`${at}: expected null`);
  if (schema.type === 'number' && typeof value !== 'number') found.push(`${at}: expected a number`);
  if (
    typeof schema.pattern === 'string' &&
    typeof value === 'string' &&
    !new RegExp(schema.pattern).test(value)
  )
    found.push(`${at}: ${JSON.stringify(value)} does not match ${schema.pattern}`);
  if (Array.isArray(value) && typeof schema.maxItems === 'number' && value.length > schema.maxItems)
    found.push(`${at}: more than ${schema.maxItems} items`);
  if (Array.isArray(value) && typeof schema.minItems === 'number' && value.length < schema.minItems)
    found.push(`${at}: fewer than ${schema.minItems} items`);
  switch (schema.type) {
    case 'integer':
      if (!Number.isInteger(value)) found.push(`${at}: expected an integer, got ${JSON.stringify(value)}`);
      break;
    case 'string':
    case 'boolean':
      if (typeof value !== schema.type)
        found.push(`${at}: expected a ${schema.type}, got ${JSON.stringify(value)}`);
      break;
    case 'array':
      if (!Array.isArray(value)) found.push(`${at}: expected an array`);
      else {
        for (const [i, item] of value.entries()) {
          found.push(...problems(item, schema.items as Schema, `${at}[${i}]`));
        }
      }
      break;
    case 'object': {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) {
        found.push(`${at}: expected an object`);
        break;
      }
      const record = value as Record<string, unknown>;
      for (const key of (schema.required as string[] | undefined) ?? []) {
        if (!(key in record)) found.push(`${at}: missing required ${key}`);
      }
      for (const [key, property] of Object.entries((schema.properties as Record<string, Schema>) ?? {})) {
        if (key in record) found.push(...problems(record[key], property, `${at}.${key}`));
      }
      break;
    }
  }
  return found;
}

/** The JSON schema of an operation's answer with `status`; throws where none is documented. */
export function responseSchemaIn(doc: Document, path: string, method: string, status = '200'): Schema {
  const responses = doc.paths[path]?.[method]?.responses as Record<string, Schema> | undefined;
  const content = responses?.[status]?.content as Record<string, { schema: Schema }> | undefined;
  const schema = content?.['application/json']?.schema;
  if (!schema) throw new Error(`no ${status} JSON response documented for ${method} ${path}`);
  return schema;
}
