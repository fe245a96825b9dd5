import { describe, expect, it } from 'vitest';
import { href, parseRoute, type Route } from './route.js';

describe('dashboard routes', () => {
  it.each<[string, Route]>([
    ['', { page: 'endpoints' }],
    ['#/', { page: 'endpoints' }],
    ['#/endpoints', { page: 'endpoints' }],
    ['#/endpoints/new', { page: 'create' }],
    ['#/endpoints/abc', { page: 'endpoint', id: 'abc' }],
    ['#/endpoints/abc/edit', { page: 'edit', id: 'abc' }],
    ['#/credentials', { page: 'credentials' }],
    ['#/gpus', { page: 'gpus' }],
    ['#/keys', { page: 'keys' }],
    ['#/keys/x', { page: 'endpoints' }],
    ['#/usage', { page: 'usage' }],
    ['#/usage/x', { page: 'endpoints' }],
    ['#/models', { page: 'models' }],
    ['#/models/x', { page: 'endpoints' }],
    ['#/nowhere/x', { page: 'endpoints' }],
  ])('%j is %j', (hash, route) => {
    expect(parseRoute(hash)).toEqual(route);
  });

  it('href and parseRoute agree, ids with odd characters included', () => {
    for (const route of [
      { page: 'endpoints' },
      { page: 'create' },
      { page: 'credentials' },
      { page: 'gpus' },
      { page: 'keys' },
      { page: 'usage' },
      { page: 'models' },
      { page: 'endpoint', id: 'a/b c' },
      { page: 'edit', id: 'x?y' },
    ] as Route[]) {
      expect(parseRoute(href(route))).toEqual(route);
    }
  });
});
