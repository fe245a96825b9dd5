/**
 * What a worker's health is, by endpoint type (issue 22): an `http` worker's is its HTTP health path; a `queue`
 * worker's is its polls and pings, and also the HTTP probe of `healthy.path` when the spec sets one (its path is ''
 * when it does not). Pure: the spec's defaults, which checks run, and the words a starting worker's message uses.
 */
import { DEFAULT_HEALTH_PATH, type EndpointSpec, type EndpointType, type HealthCheck } from './endpoint.js';

/** The health path an endpoint of this type has when its spec names none: a queue endpoint has none (''). */
export function defaultHealthPath(type: EndpointType): string {
  return type === 'queue' ? '' : DEFAULT_HEALTH_PATH;
}

/**
 * The health path after a change of type: a path the spec did not name (the old type's default) becomes the new
 * type's default; one the owner named stays.
 */
export function healthPathForType(
  path: string,
  from: EndpointType,
  to: EndpointType,
  named: boolean,
): string {
  return from !== to && !named && path === defaultHealthPath(from) ? defaultHealthPath(to) : path;
}

/** Whether the worker gets the HTTP probe of its health path: always on `http`, on `queue` when one is set. */
export function probesHttp(spec: Pick<EndpointSpec, 'type' | 'health'>): boolean {
  return spec.type === 'http' || spec.health.path !== '';
}

/** Where a worker whose default health path answers 404 is asked instead (fallsBackToRoot). */
export const ROOT_PATH = '/';

/**
 * Whether a 404 from the health path sends the probe to `/`, where any answer below 500 passes: only for the
 * default path, which the owner never named. A stock web server (nginx, a static site, most apps) serves `/` and
 * not `/health`; it answers 404 there forever, and would otherwise wait out the startup deadline. A named path is
 * probed as named (docs/workers.md, Health checks).
 */
export function fallsBackToRoot(spec: Pick<EndpointSpec, 'type'> & { health: HealthCheck }): boolean {
  return spec.type === 'http' && spec.health.pathNamed !== true && spec.health.path === DEFAULT_HEALTH_PATH;
}

const FIRST_POLL = 'its first poll for a job';

/** What a started worker waits for: "/health to answer", "its first poll for a job" (and "/ready to answer"). */
export function awaitedHealth(spec: Pick<EndpointSpec, 'type' | 'health'>): string {
  if (spec.type === 'http') return `${spec.health.path} to answer`;
  return probesHttp(spec) ? `${FIRST_POLL} and ${spec.health.path} to answer` : FIRST_POLL;
}

/** The health check in a failure's words: "/health", "(its job polls)", "/ready (and its job polls)". */
export function healthCheckLabel(spec: Pick<EndpointSpec, 'type' | 'health'>): string {
  if (spec.type === 'http') return spec.health.path;
  return probesHttp(spec) ? `${spec.health.path} (and its job polls)` : '(its job polls)';
}
