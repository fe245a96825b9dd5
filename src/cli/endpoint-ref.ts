/**
 * An endpoint named on the command line by its id, its appName or its name (when only one endpoint has it):
 * `resolveEndpoint` finds which endpoint that is, through the API.
 */
import { CorralApiError, type CorralClient, type WireEndpoint } from '../client/index.js';
import { ambiguousRefMessage, resolveEndpointRef } from '../service/endpoint-ref.js';
import { CliError } from './output.js';

/** Endpoints read per page when searching by appName or name. */
const PAGE_SIZE = 1000;

/**
 * The endpoint `ref` names: the one with that id, else the one with that appName, else the only one with that
 * name. Throws the API's ENDPOINT_NOT_FOUND when none matches, and a CliError naming the ids when several share
 * the name.
 */
export function resolveEndpoint(client: CorralClient, ref: string): Promise<WireEndpoint<number>> {
  return withEndpointId(client, ref, (id) => client.getEndpoint(id));
}

/**
 * Runs `call` with `ref` as the endpoint id (one request when it is one); when the API knows no endpoint with that
 * id, runs it again with the id of the endpoint whose appName or (only) name `ref` is.
 */
export async function withEndpointId<T>(
  client: CorralClient,
  ref: string,
  call: (id: string) => Promise<T>,
): Promise<T> {
  try {
    return await call(ref);
  } catch (error) {
    if (!isNotFound(error)) throw error;
    const match = await findByNameOrAppName(client, ref);
    if (match === undefined || match.id === ref) {
      throw new CorralApiError(
        error.status,
        error.reason,
        `no endpoint has the id, appName or name "${ref}"`,
        error.metadata,
      );
    }
    return call(match.id);
  }
}

/**
 * The endpoint with appName `ref`, else the only one named `ref`, among all of the caller's endpoints: the rule of
 * `/v2/{ref}` too (service/endpoint-ref.ts).
 */
export async function findByNameOrAppName(
  client: CorralClient,
  ref: string,
): Promise<WireEndpoint | undefined> {
  const found = resolveEndpointRef(ref, await listAll(client), (e) => e);
  if (found.kind === 'ambiguous') throw new CliError(ambiguousRefMessage(ref, found.ids));
  return found.kind === 'found' ? found.endpoint : undefined;
}

/** Every endpoint of the caller, page by page. */
export async function listAll(client: CorralClient): Promise<WireEndpoint[]> {
  const all: WireEndpoint[] = [];
  for (let pageNum = 0; ; pageNum++) {
    const page = await client.listEndpoints({ pageSize: PAGE_SIZE, pageNum });
    all.push(...page.endpoints);
    if (page.endpoints.length === 0 || all.length >= page.total) return all;
  }
}

function isNotFound(error: unknown): error is CorralApiError {
  return error instanceof CorralApiError && error.reason === 'ENDPOINT_NOT_FOUND';
}
