/**
 * Which endpoint a reference names, wherever a person names one (`/v2/{ref}/...`, `corral jobs run {ref}`,
 * `corral get {ref}`): the endpoint with that id, else the one with that appName, else the only one with that name.
 * A name two endpoints share names neither: the caller is told their ids rather than given a guess. The rule is
 * applied to the endpoints the caller may reach only, so another owner's endpoint is never found by any of the three.
 */

/** The three things an endpoint is known by. */
export interface EndpointRefKeys {
  id: string;
  appName: string;
  name: string;
}

export type RefResolution<E> =
  | { kind: 'found'; endpoint: E }
  | { kind: 'ambiguous'; ids: string[] }
  | { kind: 'none' };

/**
 * The endpoint among `candidates` (those the caller may reach; any that match none of the three are ignored) that
 * `ref` names.
 */
export function resolveEndpointRef<E>(
  ref: string,
  candidates: readonly E[],
  keysOf: (endpoint: E) => EndpointRefKeys,
): RefResolution<E> {
  const byId = candidates.find((e) => keysOf(e).id === ref);
  if (byId !== undefined) return { kind: 'found', endpoint: byId };
  const byAppName = candidates.find((e) => keysOf(e).appName === ref);
  if (byAppName !== undefined) return { kind: 'found', endpoint: byAppName };
  const named = candidates.filter((e) => keysOf(e).name === ref);
  const [only, second] = named;
  if (only === undefined) return { kind: 'none' };
  if (second !== undefined) return { kind: 'ambiguous', ids: named.map((e) => keysOf(e).id) };
  return { kind: 'found', endpoint: only };
}

/** What a person is told when a name is shared: the ids to use instead. */
export function ambiguousRefMessage(ref: string, ids: readonly string[], more = false): string {
  const count = more ? `${ids.length} or more` : String(ids.length);
  return `${count} endpoints are named ${JSON.stringify(ref)} (${ids.join(', ')}): use an id or an appName`;
}
