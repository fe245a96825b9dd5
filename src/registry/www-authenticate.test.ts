/** WWW-Authenticate challenges as registries send them. */
import { describe, expect, it } from 'vitest';
import { parseWwwAuthenticate } from './www-authenticate.js';

describe('parseWwwAuthenticate', () => {
  it.each([
    ['Basic realm="Registry Realm"', [{ scheme: 'basic', params: { realm: 'Registry Realm' } }]],
    [
      'Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/nginx:pull"',
      [
        {
          scheme: 'bearer',
          params: {
            realm: 'https://auth.docker.io/token',
            service: 'registry.docker.io',
            scope: 'repository:library/nginx:pull',
          },
        },
      ],
    ],
    [
      'Bearer realm="https://ghcr.io/token", service="ghcr.io",scope="repository:o/a:pull", Basic realm="x"',
      [
        {
          scheme: 'bearer',
          params: { realm: 'https://ghcr.io/token', service: 'ghcr.io', scope: 'repository:o/a:pull' },
        },
        { scheme: 'basic', params: { realm: 'x' } },
      ],
    ],
    ['BASIC Realm=unquoted', [{ scheme: 'basic', params: { realm: 'unquoted' } }]],
    ['Basic realm="a \\"quoted\\" realm"', [{ scheme: 'basic', params: { realm: 'a "quoted" realm' } }]],
    [
      'Basic, Bearer realm="r"',
      [
        { scheme: 'basic', params: {} },
        { scheme: 'bearer', params: { realm: 'r' } },
      ],
    ],
    ['', []],
    ['Basic realm="unterminated', [{ scheme: 'basic', params: {} }]],
  ])('%s', (header, expected) => {
    expect(parseWwwAuthenticate(header)).toEqual(expected);
  });
});
