/** Image references read as Docker reads them: registry host, repository, tag or digest, Docker Hub defaults. */
import { describe, expect, it } from 'vitest';
import {
  formatReference,
  isLoopbackRegistry,
  parseImageReference,
  patternMatches,
  registryBaseUrl,
} from './image-reference.js';

const DIGEST = `sha256:${'a'.repeat(64)}`;

describe('parseImageReference', () => {
  it.each([
    ['nginx', { registry: 'docker.io', repository: 'library/nginx', tag: 'latest' }],
    ['nginx:1.25', { registry: 'docker.io', repository: 'library/nginx', tag: '1.25' }],
    ['bitnami/redis:7', { registry: 'docker.io', repository: 'bitnami/redis', tag: '7' }],
    ['docker.io/nginx', { registry: 'docker.io', repository: 'library/nginx', tag: 'latest' }],
    ['index.docker.io/library/nginx', { registry: 'docker.io', repository: 'library/nginx', tag: 'latest' }],
    ['ghcr.io/org/team/app:v2', { registry: 'ghcr.io', repository: 'org/team/app', tag: 'v2' }],
    ['localhost/app', { registry: 'localhost', repository: 'app', tag: 'latest' }],
    ['localhost:5000/app:1', { registry: 'localhost:5000', repository: 'app', tag: '1' }],
    [
      '127.0.0.1:41234/private/worker:1',
      { registry: '127.0.0.1:41234', repository: 'private/worker', tag: '1' },
    ],
    ['[::1]:5000/app', { registry: '[::1]:5000', repository: 'app', tag: 'latest' }],
    [`app@${DIGEST}`, { registry: 'docker.io', repository: 'library/app', tag: 'latest', digest: DIGEST }],
    [`r.io/a/b:1@${DIGEST}`, { registry: 'r.io', repository: 'a/b', tag: '1', digest: DIGEST }],
    [
      'corral-test-worker:latest',
      { registry: 'docker.io', repository: 'library/corral-test-worker', tag: 'latest' },
    ],
    ['my_org/app__x', { registry: 'docker.io', repository: 'my_org/app__x', tag: 'latest' }],
  ])('%s', (reference, expected) => {
    expect(parseImageReference(reference)).toEqual(expected);
  });

  it.each([
    ['', 'empty'],
    ['Nginx', 'uppercase repository'],
    ['app:', 'empty tag'],
    ['app@sha256:xyz', 'digest that is not hex'],
    ['r.io/', 'no repository'],
    ['a//b', 'empty path component'],
    ['app:bad/tag', 'slash in a tag'],
  ])('rejects %j (%s)', (reference) => {
    expect(parseImageReference(reference)).toBeUndefined();
  });

  it('writes a reference in full', () => {
    expect(formatReference(parseImageReference('nginx') as never)).toBe('docker.io/library/nginx:latest');
    expect(formatReference(parseImageReference(`r.io/a@${DIGEST}`) as never)).toBe(`r.io/a@${DIGEST}`);
  });
});

describe('where a registry is spoken to', () => {
  it.each([
    ['docker.io', 'https://registry-1.docker.io'],
    ['ghcr.io', 'https://ghcr.io'],
    ['registry.example.com:5000', 'https://registry.example.com:5000'],
    ['localhost:5000', 'http://localhost:5000'],
    ['127.0.0.1:41234', 'http://127.0.0.1:41234'],
    ['127.1.2.3', 'http://127.1.2.3'],
    ['[::1]:5000', 'http://[::1]:5000'],
    ['128.0.0.1:5000', 'https://128.0.0.1:5000'],
  ])('%s -> %s', (registry, url) => {
    expect(registryBaseUrl(registry)).toBe(url);
    expect(isLoopbackRegistry(registry)).toBe(url.startsWith('http:'));
  });
});

describe('patternMatches (the operator allowance for local-only images)', () => {
  it.each([
    ['corral-test-worker', 'corral-test-worker:latest', true],
    ['corral-test-worker', 'corral-test-worker:v2', true],
    ['corral-test-worker:latest', 'corral-test-worker', true],
    ['corral-test-worker:latest', 'corral-test-worker:v2', false],
    ['docker.io/library/corral-test-worker', 'corral-test-worker', true],
    ['corral-test-worker', 'other/corral-test-worker', false],
    ['r.io/team/app', 'r.io/team/app:1', true],
    ['r.io/team/app', 'q.io/team/app:1', false],
    [`app@${DIGEST}`, `app@${DIGEST}`, true],
    [`app@${DIGEST}`, 'app:latest', false],
    ['not a pattern', 'app', false],
  ])('%s allows %s: %s', (pattern, image, matches) => {
    expect(patternMatches(pattern, image)).toBe(matches);
  });
});
