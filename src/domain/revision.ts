/**
 * Spec comparison: which changes need a new revision (new workers, rolled out) and which apply in place, which
 * top-level fields changed, for the event log, and the endpoint a changed spec makes (the owner's updates and the
 * idle policy's alike).
 */
import type { Endpoint, EndpointSpec, EndpointState, StateReport } from './endpoint.js';

/**
 * Which spec changes need new workers (a new revision and a rolling replacement).
 * Scaling numbers, names and the policy apply in place.
 */
export function workerShapeChanges(before: EndpointSpec, after: EndpointSpec): string[] {
  const shape = (spec: EndpointSpec) => ({
    image: spec.image,
    port: spec.port,
    env: spec.env,
    volumes: spec.volumes,
    clusterId: spec.clusterId,
    productIds: spec.productIds,
    gpusPerWorker: spec.workers.gpusPerWorker,
    cudaVersion: spec.workers.cudaVersion,
    healthPath: spec.health.path,
    rootfsSizeGB: spec.rootfsSizeGB,
    // A queue worker's env carries the worker protocol's variables; an http worker's does not.
    type: spec.type,
    // What is mounted in a worker is fixed when it starts.
    models: spec.models,
  });
  const a = shape(before);
  const b = shape(after);
  return (Object.keys(a) as (keyof typeof a)[]).filter(
    (key) => JSON.stringify(a[key]) !== JSON.stringify(b[key]),
  );
}

/** Top-level fields that differ, for the event log. */
export function changedFields(before: EndpointSpec, after: EndpointSpec): string[] {
  return (Object.keys(before) as (keyof EndpointSpec)[]).filter(
    (key) => JSON.stringify(before[key]) !== JSON.stringify(after[key]),
  );
}

/**
 * The endpoint with its spec replaced by `next` at `now`: a new revision where the workers' shape changed (rolled
 * out from `serving`), and the fields that changed.
 */
export function revisedEndpoint(
  endpoint: Endpoint,
  next: EndpointSpec,
  now: number,
): { next: Endpoint; fields: string[] } {
  const fields = changedFields(endpoint.spec, next);
  const reshaped = workerShapeChanges(endpoint.spec, next).length > 0;
  const revision = reshaped ? endpoint.revision + 1 : endpoint.revision;
  const status: StateReport<EndpointState> =
    reshaped && endpoint.status.state === 'serving'
      ? { state: 'updating', error: '', message: `rolling out revision ${revision}` }
      : endpoint.status;
  return { next: { ...endpoint, spec: next, revision, status, updatedAt: now }, fields };
}
