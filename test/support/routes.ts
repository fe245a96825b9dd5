/** The operations a Fastify app serves, read from its route tree (for the API docs and OpenAPI tests). */
import type { FastifyInstance } from 'fastify';

/** The dashboard's pages (`/` sends to `/ui/`): static files for browsers, not API operations (docs/dashboard.md). */
const DASHBOARD_PAGE = /^(\/|\/ui(\/.*)?)$/;

/**
 * Every `METHOD path` the app serves (HEAD and OPTIONS left out, and the dashboard's pages), from the tree that printRoutes draws: each line
 * is a path segment appended to its parent's, indented four characters per level, with its methods in parentheses.
 */
export function servedOperations(app: FastifyInstance): string[] {
  const parents: string[] = [];
  const operations: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const match = /^((?:│ {3}| {4})*)(?:├── |└── )(.*?)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (!match) continue;
    const depth = (match[1] ?? '').length / 4;
    const path = (parents[depth - 1] ?? '') + (match[2] ?? '');
    parents[depth] = path;
    parents.length = depth + 1;
    for (const method of (match[3] ?? '').split(',').map((m) => m.trim())) {
      if (method === '' || method === 'HEAD' || method === 'OPTIONS' || DASHBOARD_PAGE.test(path)) continue;
      operations.push(`${method} ${path}`);
    }
  }
  return operations;
}
