/**
 * What a worker's health is, by endpoint type (issue 22): an `http` worker's is its HTTP health path; a `queue`
 * worker's is its polls and pings, and also the HTTP probe of `healthy.path` when the spec sets one (its path is ''
 * when it does not). Pure: the spec's defaults, which checks run, and the words a starting worker's message uses.
 */
import { DEFAULT_HEALTH_PATH, type EndpointSpec, type EndpointType } from './endpoint.js';

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
