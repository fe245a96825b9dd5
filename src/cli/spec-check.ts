/**
 * The CLI's strict reading of its own spec files: every key must be one the API knows (an unknown one is a problem,
 * with a did-you-mean), and the values must have the API's shapes. The API itself stays lenient (clients echo
 * fields back); only files given to the CLI are checked so. The known keys come from the request schemas
 * (contract/json-schema.ts), so they follow the API.
 */
import { parseCreateBody, parseUpdateBody } from '../contract/endpoint-input.js';
import { endpointInput } from '../contract/endpoint-schema.js';
import { componentRef, type JsonSchema, requestJsonSchemas } from '../contract/json-schema.js';
import { specRangeProblems } from '../contract/spec-ranges.js';
import type { WireLimits } from '../contract/wire.js';
import { closestName } from '../domain/spelling.js';
import { type SpecIssue, SpecProblems } from './output.js';
import { type Fields, isRecord } from './spec-file.js';

/** Whether the file is a whole spec (create, apply) or only the fields to change (update). */
export type SpecUse = 'create' | 'update';

/**
 * Throws SpecProblems listing every unknown key and every value of the wrong shape in `fields`, and, given the
 * server's limits, every value out of its range (contract/spec-ranges.ts), so that one run names them all.
 */
export function checkSpec(source: string, fields: Fields, use: SpecUse, limits?: WireLimits): void {
  const issues = unknownKeys(fields);
  // Shapes (types, required fields) as the API parses them; ranges against the server's limits where given.
  const parsed =
    use === 'create'
      ? parseCreateBody({ endpoint: fields }, { localVolumeSizeGB: 0 })
      : parseUpdateBody({ ...fields, id: 'checked-locally' }, { localVolumeSizeGB: 0 });
  const ranges = limits === undefined ? [] : specRangeProblems(fields, limits, use);
  for (const issue of [...(parsed.ok ? [] : parsed.issues), ...ranges]) {
    if (!issues.some((i) => i.field === issue.field)) {
      issues.push({ field: issue.field, reason: issue.reason, message: issue.message });
    }
  }
  if (issues.length > 0) throw new SpecProblems(source, issues);
}

/** Every key of `fields` (at any depth) that the endpoint input schema does not have, with a suggestion. */
export function unknownKeys(fields: Fields): SpecIssue[] {
  // endpointInput is imported so that its schemas are registered before they are read.
  void endpointInput;
  const schemas = requestJsonSchemas();
  const root = schemas.EndpointInput;
  if (root === undefined) throw new Error('the EndpointInput schema is not registered');
  const issues: SpecIssue[] = [];
  walk(fields, root, [], { schemas, issues });
  return issues;
}

interface Walk {
  schemas: Record<string, JsonSchema>;
  issues: SpecIssue[];
}

function walk(value: unknown, schema: JsonSchema, path: string[], at: Walk): void {
  for (const branch of branches(schema, at.schemas)) {
    if (isRecord(value) && isRecord(branch.properties)) {
      const known = Object.keys(branch.properties);
      for (const [key, child] of Object.entries(value)) {
        const childSchema = branch.properties[key];
        if (isRecord(childSchema)) {
          walk(child, childSchema, [...path, key], at);
          continue;
        }
        const field = [...path, key].join('.');
        const guess = didYouMean(key, known);
        at.issues.push({
          field,
          reason: 'UNKNOWN_FIELD',
          message: `unknown key "${field}"${guess === undefined ? '' : `: did you mean "${guess}"?`}`,
        });
      }
      return;
    }
    if (Array.isArray(value) && isRecord(branch.items)) {
      const items = branch.items;
      value.forEach((item, index) => {
        walk(item, items, [...path, String(index)], at);
      });
      return;
    }
  }
}

/** The schema's alternatives with references resolved, flattened (anyOf, oneOf). */
function branches(schema: JsonSchema, schemas: Record<string, JsonSchema>): JsonSchema[] {
  const ref = schema.$ref;
  if (typeof ref === 'string') {
    const target = schemas[ref.slice(componentRef('').length)];
    return target === undefined ? [] : branches(target, schemas);
  }
  const alternatives = [schema.anyOf, schema.oneOf].filter(Array.isArray).flat().filter(isRecord);
  if (alternatives.length > 0) return alternatives.flatMap((a) => branches(a, schemas));
  return [schema];
}

/** The known key `key` was most likely meant to be: same letters in another case, or a close spelling. */
export function didYouMean(key: string, known: readonly string[]): string | undefined {
  return closestName(key, known);
}

/** The documented defaults of an object field's keys (`workerConfig` -> `{minNum: 0, maxNum: 1, ...}`). */
export function documentedDefaults(field: string): Fields {
  void endpointInput;
  const schemas = requestJsonSchemas();
  const property = schemas.EndpointInput?.properties;
  const schema = isRecord(property) ? property[field] : undefined;
  if (!isRecord(schema)) return {};
  const defaults: Fields = {};
  for (const branch of branches(schema, schemas)) {
    if (!isRecord(branch.properties)) continue;
    for (const [key, child] of Object.entries(branch.properties)) {
      if (isRecord(child) && child.default !== undefined) defaults[key] = child.default;
    }
  }
  return defaults;
}
