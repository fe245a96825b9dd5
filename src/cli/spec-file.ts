/**
 * An endpoint spec read from a YAML or JSON file, or stdin, for `corral endpoints create|update` and `corral apply`;
 * `readCheckedSpec` also checks it strictly (spec-check.ts).
 */
import { parse } from 'yaml';
import type { CorralClient } from '../client/index.js';
import type { WireLimits } from '../contract/wire.js';
import type { CliDeps } from './deps.js';
import { CliError, SpecProblems } from './output.js';
import { checkSpec, didYouMean, type SpecUse } from './spec-check.js';

export type Fields = Record<string, unknown>;

/** What a spec file holds: the endpoint fields, and the keys found beside `endpoint:` (which nothing reads). */
interface SpecText {
  source: string;
  fields: Fields;
  besideEndpoint: string[];
}

/**
 * Reads an endpoint spec from a YAML or JSON file (`-` reads stdin). The file holds either
 * `{endpoint: {...}}`, as the create body does, or the endpoint fields at the top level.
 */
export async function readSpecFile(deps: CliDeps, path: string): Promise<Fields> {
  return (await readSpecText(deps, path)).fields;
}

/**
 * Reads a spec file as readSpecFile does and checks it strictly: throws SpecProblems listing every unknown key
 * (with a did-you-mean) and every value the API could not parse.
 */
export async function readCheckedSpec(
  deps: CliDeps,
  path: string,
  use: SpecUse,
  /** The server's limits: asked only when the file has problems, so that its ranges are named with them. */
  limits?: () => Promise<WireLimits | undefined>,
): Promise<Fields> {
  const { source, fields, besideEndpoint } = await readSpecText(deps, path);
  const beside = besideEndpoint.map((key) => {
    const guess = didYouMean(key, ['endpoint']);
    return {
      field: key,
      reason: 'UNKNOWN_FIELD',
      message: `unknown key "${key}" beside "endpoint"${guess === undefined ? '' : `: did you mean "${guess}"?`}`,
    };
  });
  try {
    checkSpec(source, fields, use);
  } catch (error) {
    if (!(error instanceof SpecProblems)) throw error;
    const known = await limits?.();
    const all =
      known === undefined ? error : (problemsOf(() => checkSpec(source, fields, use, known)) ?? error);
    throw new SpecProblems(source, [...beside, ...all.issues]);
  }
  if (beside.length > 0) throw new SpecProblems(source, beside);
  return fields;
}

/** The server's limits for readCheckedSpec; when they cannot be had, the file's own problems are said without ranges. */
export function limitsOf(client: CorralClient): () => Promise<WireLimits | undefined> {
  return () => client.getLimits().catch(() => undefined);
}

function problemsOf(check: () => void): SpecProblems | undefined {
  try {
    check();
    return undefined;
  } catch (error) {
    if (error instanceof SpecProblems) return error;
    throw error;
  }
}

async function readSpecText(deps: CliDeps, path: string): Promise<SpecText> {
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
  const wrapper = isRecord(value) && isRecord(value.endpoint) ? value : undefined;
  const fields = wrapper === undefined ? value : wrapper.endpoint;
  if (!isRecord(fields)) {
    throw new CliError(`${source} must hold a mapping of endpoint fields (or {endpoint: {...}})`);
  }
  const besideEndpoint =
    wrapper === undefined ? [] : Object.keys(wrapper).filter((key) => key !== 'endpoint');
  return { source, fields, besideEndpoint };
}

export function isRecord(value: unknown): value is Fields {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
