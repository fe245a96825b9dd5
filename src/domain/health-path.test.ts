import { describe, expect, it } from 'vitest';
import { DEFAULT_HEALTH, type EndpointType } from './endpoint.js';
import { awaitedHealth, healthCheckLabel, healthPathForType, probesHttp } from './health-path.js';

const spec = (type: EndpointType, path: string) => ({ type, health: { path, ...DEFAULT_HEALTH } });

describe("a worker's health by endpoint type", () => {
  it.each([
    ['http', '/health', true, '/health to answer', '/health'],
    ['queue', '', false, 'its first poll for a job', '(its job polls)'],
    ['queue', '/ready', true, 'its first poll for a job and /ready to answer', '/ready (and its job polls)'],
  ] as const)(
    '%s with path %j: HTTP probe %s, waits for %j, named %j',
    (type, path, http, awaited, label) => {
      expect(probesHttp(spec(type, path))).toBe(http);
      expect(awaitedHealth(spec(type, path))).toBe(awaited);
      expect(healthCheckLabel(spec(type, path))).toBe(label);
    },
  );

  it("moves a path the spec did not name to the new type's default, and keeps a named one", () => {
    expect(healthPathForType('/health', 'http', 'queue', false)).toBe('');
    expect(healthPathForType('', 'queue', 'http', false)).toBe('/health');
    expect(healthPathForType('/health', 'http', 'queue', true)).toBe('/health');
    expect(healthPathForType('/ready', 'http', 'queue', false)).toBe('/ready');
    expect(healthPathForType('/health', 'http', 'http', false)).toBe('/health');
  });
});
