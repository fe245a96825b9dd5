/** An endpoint spec read from a YAML or JSON file, or stdin, for `corral endpoints create|update`. */
import { parse } from 'yaml';
import type { CliDeps } from './deps.js';
import { CliError } from './output.js';

export type Fields = Record<string, unknown>;

/**
 * Reads an endpoint spec from a YAML or JSON file (`-` reads stdin). The file holds either
 * `{endpoint: {...}}`, as the create body does, or the endpoint fields at the top level.
 */
export async function readSpecFile(deps: CliDeps, path: string): Promise<Fields> {
  const source = path === '-' ? 'stdin' : path;
  let text: string;
  try {
    text = path === '-' ? await deps.readStdin() : await deps.readFile(path);
  } catch (error) {
    throw new CliError(`cannot read ${source}: ${error instanceof Error ? error.message : String(error)}`);
  }
  let value: unknown;
  try {
    value = parse(text);
  } catch (error) {
    throw new CliError(`cannot parse ${source}: ${error instanceof Error ? error.message : String(error)}`);
  }
  const fields = isRecord(value) && isRecord(value.endpoint) ? value.endpoint : value;
  if (!isRecord(fields)) {
    throw new CliError(`${source} must hold a mapping of endpoint fields (or {endpoint: {...}})`);
  }
  return fields;
}

export function isRecord(value: unknown): value is Fields {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
