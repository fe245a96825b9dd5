/**
 * Which of the workers a runtime lists are this installation's. Several installations (and test suites) may share
 * one Docker engine; each adopts and removes only what it made.
 */
import { LABELS } from '../runtime/types.js';

/**
 * A worker labelled with an installation id is ours when the id is ours. One without the label was made by a
 * Corral from before installation ids: it is ours when its endpoint is one of ours (endpoint ids are random, so
 * another installation's never match), which lets an upgrade adopt its running workers. Without an id of our own
 * (tests, benchmarks) every managed worker is ours.
 */
export function ownedHere(
  labels: Readonly<Record<string, string>>,
  installationId: string | undefined,
  endpoints: ReadonlyMap<string, unknown>,
): boolean {
  if (installationId === undefined) return true;
  const label = labels[LABELS.installation];
  if (label !== undefined) return label === installationId;
  const endpointId = labels[LABELS.endpoint];
  return endpointId !== undefined && endpoints.has(endpointId);
}
