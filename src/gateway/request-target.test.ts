import { describe, expect, it } from 'vitest';
import {
  forwardedPrefix,
  splitAbsoluteUrl,
  type TargetedRequest,
  takePathForm,
  targetProblem,
} from './request-target.js';

function request(url: string, hosts: string[]): TargetedRequest {
  return { url, rawHeaders: hosts.flatMap((h) => ['Host', h]), headers: { host: hosts[0] } };
}

describe('targetProblem', () => {
  it.each([
    {
      case: 'a path with one Host',
      url: '/v1/models?x=1',
      hosts: ['a.localhost:8000'],
      path: '/v1/models?x=1',
    },
    {
      case: 'an absolute URL naming the Host',
      url: 'http://a.localhost:8000/v1',
      hosts: ['A.localhost:8000'],
      path: '/v1',
    },
    {
      case: 'an absolute URL with a query and no path',
      url: 'http://a.localhost?x=1',
      hosts: ['a.localhost'],
      path: '/?x=1',
    },
    {
      case: 'an absolute URL and no Host header',
      url: 'https://a.localhost:8000',
      hosts: [],
      path: '/',
      host: 'a.localhost:8000',
    },
  ])('routes $case, forwarding the path', ({ url, hosts, path, host }) => {
    const req = request(url, hosts);
    expect(targetProblem(req)).toBeUndefined();
    expect(req.url).toBe(path);
    expect(req.headers.host).toBe(host ?? hosts[0]);
  });

  it.each([
    {
      case: 'two Host headers',
      url: '/',
      hosts: ['a.localhost', 'b.localhost'],
      problem: /more than one Host/,
    },
    {
      case: 'an absolute URL naming another host than Host',
      url: 'http://b.localhost:8000/admin',
      hosts: ['a.localhost:8000'],
      problem: /names b\.localhost:8000 but the Host header names a\.localhost:8000/,
    },
    {
      case: 'the asterisk form',
      url: '*',
      hosts: ['a.localhost'],
      problem: /neither a path nor an http\(s\) URL/,
    },
    { case: 'the authority form', url: 'a.localhost:443', hosts: ['a.localhost'], problem: /neither a path/ },
    { case: 'another scheme', url: 'ftp://a.localhost/x', hosts: ['a.localhost'], problem: /neither a path/ },
  ])('refuses $case', ({ url, hosts, problem }) => {
    const req = request(url, hosts);
    expect(targetProblem(req)).toMatch(problem);
    expect(req.url).toBe(url);
  });
});

describe('splitAbsoluteUrl', () => {
  it.each([
    ['http://a.localhost/x/y?z=1#frag', { authority: 'a.localhost', path: '/x/y?z=1' }],
    ['HTTP://a.localhost:8000', { authority: 'a.localhost:8000', path: '/' }],
    ['http://[::1]:8000/x', { authority: '[::1]:8000', path: '/x' }],
    ['http:///x', undefined],
    ['http://user@a.localhost/', undefined],
    ['/x', undefined],
  ])('%s -> %j', (url, expected) => {
    expect(splitAbsoluteUrl(url)).toEqual(expected);
  });
});

describe('takePathForm', () => {
  it.each([
    ['/e/my-app/v1/models?x=1', 'my-app', '/v1/models?x=1'],
    ['/e/my-app', 'my-app', '/'],
    ['/e/My-App?x=1', 'my-app', '/?x=1'],
    ['/e/a1/', 'a1', '/'],
  ])('%s is the endpoint %s, forwarded as %s', (url, appName, path) => {
    const req = { url };
    expect(takePathForm(req)).toBe(appName);
    expect(req.url).toBe(path);
    expect(forwardedPrefix(req)).toBe(`/e/${appName}`);
  });

  it.each(['/v1/models', '/e/', '/e//x', '/e/bad_name/x', '/e/-x/', '/eapp/x'])(
    '%s is no path form',
    (url) => {
      const req = { url };
      expect(takePathForm(req)).toBeUndefined();
      expect(req.url).toBe(url);
      expect(forwardedPrefix(req)).toBeUndefined();
    },
  );
});
