/** The registry's grammar of image references: what reads as a reference, and why the rest does not. */
import { describe, expect, it } from 'vitest';
import { floatsOnLatest, imageNameProblem, parseImageName } from './image-name.js';

const SHA256 = `sha256:${'0123456789abcdef'.repeat(4)}`;

describe('floatsOnLatest', () => {
  it.each([
    ['nginx', true],
    ['nginx:latest', true],
    ['localhost:5000/app', true],
    ['localhost:5000/app:latest', true],
    ['ghcr.io/org/app:1.2', false],
    ['localhost:5000/app:v1', false],
    [`app@sha256:${'a'.repeat(64)}`, false],
    [`app:latest@sha256:${'a'.repeat(64)}`, true],
  ])('%s -> %s', (reference, floats) => {
    expect(floatsOnLatest(reference)).toBe(floats);
  });
});

describe('parseImageName', () => {
  it.each([
    ['nginx', { path: 'nginx' }],
    ['nginx:1.25', { path: 'nginx', tag: '1.25' }],
    ['library/nginx:latest', { path: 'library/nginx', tag: 'latest' }],
    ['bitnami/redis:7', { path: 'bitnami/redis', tag: '7' }],
    ['ghcr.io/org/team/app:v2', { domain: 'ghcr.io', path: 'org/team/app', tag: 'v2' }],
    ['localhost/app', { domain: 'localhost', path: 'app' }],
    ['localhost:5000/app:1', { domain: 'localhost:5000', path: 'app', tag: '1' }],
    ['127.0.0.1:41234/private/worker:1', { domain: '127.0.0.1:41234', path: 'private/worker', tag: '1' }],
    ['[::1]:5000/app', { domain: '[::1]:5000', path: 'app' }],
    ['Registry.Example.COM/app', { domain: 'Registry.Example.COM', path: 'app' }],
    ['my-registry/app', { path: 'my-registry/app' }],
    ['MyHost/app', { domain: 'MyHost', path: 'app' }],
    [`app@${SHA256}`, { path: 'app', digest: SHA256 }],
    [`r.io/a/b:1@${SHA256}`, { domain: 'r.io', path: 'a/b', tag: '1', digest: SHA256 }],
    [`app@sha512:${'ab'.repeat(64)}`, { path: 'app', digest: `sha512:${'ab'.repeat(64)}` }],
    ['my_org/app__x', { path: 'my_org/app__x' }],
    ['a.b/c--d/e.f_g', { domain: 'a.b', path: 'c--d/e.f_g' }],
    ['corral-test-worker:latest', { path: 'corral-test-worker', tag: 'latest' }],
    [`app:${'t'.repeat(128)}`, { path: 'app', tag: 't'.repeat(128) }],
    ['localhost:5000', { path: 'localhost', tag: '5000' }],
    [`${'a'.repeat(255)}:1`, { path: 'a'.repeat(255), tag: '1' }],
  ])('reads %s', (reference, name) => {
    expect(parseImageName(reference)).toEqual({ ok: true, name });
    expect(imageNameProblem(reference)).toBeUndefined();
  });

  it.each([
    ['', 'empty'],
    ['bars//node:1', 'empty path component'],
    ['../../../etc/passwd', '.. as a host'],
    ['../../../../127.0.0.1:17150/ssrf-probe?x=', 'a path that climbs to another host'],
    ['app/../../x', '.. as a path component'],
    ['/app', 'leading slash'],
    ['app/', 'trailing slash'],
    ['r.io/', 'no repository'],
    ['Nginx', 'uppercase repository'],
    ['org/MyApp:1', 'uppercase path component'],
    ['app:', 'empty tag'],
    ['app:bad/tag', 'slash in a tag'],
    ['app:-x', 'tag starting with -'],
    [`app:${'t'.repeat(129)}`, 'tag over 128 characters'],
    [`${'a'.repeat(256)}:1`, 'name over 255 characters'],
    ['app@sha256:xyz', 'digest that is not hex'],
    [`app@sha256:${'A'.repeat(64)}`, 'uppercase sha256 hex'],
    [`app@sha256:${'a'.repeat(32)}`, 'sha256 of the wrong length'],
    [`app@md5:${'a'.repeat(32)}`, 'unknown algorithm'],
    [`app@${SHA256}@${SHA256}`, 'two digests'],
    ['app?x=1', 'query'],
    ['app#frag', 'fragment'],
    ['app%2F..', 'escaped slash'],
    ['ap p', 'space'],
    [' app', 'leading space'],
    ['app\n', 'newline'],
    ['a..b/c', 'empty host label'],
    ['-a.io/c', 'host starting with -'],
    ['a.io:port/c', 'port that is not a number'],
    ['a__-b', 'mixed separators'],
    ['a___b', 'three underscores'],
    ['a..b', 'two dots in a path component'],
    ['é/app', 'non-ASCII'],
  ])('refuses %j (%s) and says why', (reference) => {
    const result = parseImageName(reference);
    expect(result.ok).toBe(false);
    expect(imageNameProblem(reference)).toMatch(/\w/);
  });

  it('names the fault: lowercase, an empty component, a host', () => {
    expect(imageNameProblem('Nginx')).toBe('the repository name must be lowercase');
    expect(imageNameProblem('bars//node:1')).toBe('a path component is empty');
    expect(imageNameProblem('../../../etc/passwd')).toBe('".." is not a registry host[:port]');
  });
});
