/** The dashboard's pages as hash routes (`#/endpoints/ID`): parsed here, so that links and the router agree. */

export type Route =
  | { page: 'endpoints' }
  | { page: 'credentials' }
  | { page: 'gpus' }
  | { page: 'keys' }
  | { page: 'usage' }
  | { page: 'models' }
  | { page: 'create' }
  | { page: 'endpoint'; id: string }
  | { page: 'edit'; id: string };

/** The route a location hash names; anything unknown is the endpoints list. */
export function parseRoute(hash: string): Route {
  const parts = hash
    .replace(/^#\/?/, '')
    .split('/')
    .filter((part) => part !== '')
    .map((part) => decodeURIComponent(part));
  if (parts[0] === 'credentials' && parts.length === 1) return { page: 'credentials' };
  if (parts[0] === 'gpus' && parts.length === 1) return { page: 'gpus' };
  if (parts[0] === 'keys' && parts.length === 1) return { page: 'keys' };
  if (parts[0] === 'usage' && parts.length === 1) return { page: 'usage' };
  if (parts[0] === 'models' && parts.length === 1) return { page: 'models' };
  if (parts[0] !== 'endpoints') return { page: 'endpoints' };
  const id = parts[1];
  if (id === undefined) return { page: 'endpoints' };
  if (id === 'new' && parts.length === 2) return { page: 'create' };
  if (parts[2] === 'edit') return { page: 'edit', id };
  return { page: 'endpoint', id };
}

/** The hash of a route, for links. */
export function href(route: Route): string {
  switch (route.page) {
    case 'endpoints':
      return '#/endpoints';
    case 'credentials':
      return '#/credentials';
    case 'gpus':
      return '#/gpus';
    case 'keys':
      return '#/keys';
    case 'usage':
      return '#/usage';
    case 'models':
      return '#/models';
    case 'create':
      return '#/endpoints/new';
    case 'endpoint':
      return `#/endpoints/${encodeURIComponent(route.id)}`;
    case 'edit':
      return `#/endpoints/${encodeURIComponent(route.id)}/edit`;
  }
}
