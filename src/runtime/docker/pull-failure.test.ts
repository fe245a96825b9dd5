import { describe, expect, it } from 'vitest';
import { pullFailureReason } from './pull-failure.js';

const SECRET = 'secret-TOKEN-abc123';

describe('why a pull failed, in fixed words', () => {
  it.each([
    // What Docker 20.10 said against a registry stand-in answering every request with that status and body.
    [
      `error parsing HTTP 418 response body: invalid character 's' looking for beginning of value: "${SECRET}"`,
      'the registry answered HTTP 418',
    ],
    [
      `error parsing HTTP 404 response body: invalid character 's' looking for beginning of value: "${SECRET} not found"`,
      'the registry has no such image or tag (HTTP 404)',
    ],
    ['received unexpected HTTP status: 500 Internal Server Error', 'the registry answered HTTP 500'],
    [
      `manifest for 127.0.0.1:42663/x:1 not found: manifest unknown: ${SECRET}`,
      'the registry has no such image or tag',
    ],
    [`toomanyrequests: ${SECRET}`, 'the registry refused the pull: too many requests (HTTP 429)'],
    [
      `denied: ${SECRET}`,
      'the registry refused the pull: no credentials, or credentials that cannot pull it',
    ],
    ['unauthorized: authentication required', 'the registry refused the pull: no credentials'],
    [
      "pull access denied for corral/echo, repository does not exist or may require 'docker login'",
      'no such repository, or it needs credentials',
    ],
    [
      'Get "https://nonexistent.invalid/v2/": dial tcp: lookup nonexistent.invalid on 10.255.255.53:53: no such host',
      'the registry host could not be resolved',
    ],
    [
      'Get "http://127.0.0.1:1/v2/": dial tcp 127.0.0.1:1: connect: connection refused',
      'the registry could not be reached',
    ],
    ['invalid reference format', 'the engine reads the reference as invalid'],
    [`${SECRET}`, 'the engine could not pull it'],
  ])('%s', (engine, reason) => {
    const said = pullFailureReason(engine);
    expect(said).toContain(reason);
    expect(said).not.toContain(SECRET);
  });
});
