/**
 * A spec's problems that a client can know without the server's catalogue: its values against the server's limits
 * (GET endpoint/limit) and the spec's own rules (lengths, names, ports), checked by the domain's validation as the
 * server checks them. For the CLI's local check of a spec file, so that a file with an unknown key also hears of
 * its ranges in the same answer. Products, storages, credentials and secrets are the server's to check.
 */
import { DEFAULT_LIMITS } from '../domain/limits.js';
import { createSpec } from '../domain/spec-patch.js';
import { type ValidationCatalog, validateSpec } from '../domain/validate.js';
import { parseCreateBody, parseUpdateBody } from './endpoint-input.js';
import { wireField, wireMessage } from './fields.js';
import { applyWireLimits } from './limits.js';
import type { WireLimits } from './wire.js';

export interface WireIssue {
  field: string;
  reason: string;
  message: string;
}

/** The catalogue's own problems are the server's: everything the spec names exists here. */
const CATALOGUE_REASONS = new Set([
  'UNKNOWN_PRODUCT',
  'UNKNOWN_CREDENTIALS',
  'UNKNOWN_STORAGE',
  'CLUSTER_MISMATCH',
]);

/**
 * The range and rule problems of the fields given (`fields`, wire-named), in wire names, for those fields only:
 * an update's omitted fields keep values this check does not know, so it says nothing of them.
 */
export function specRangeProblems(
  fields: Record<string, unknown>,
  wireLimits: WireLimits,
  use: 'create' | 'update',
): WireIssue[] {
  const base = { ...structuredClone(DEFAULT_LIMITS), cudaVersions: [...wireLimits.cudaVersionList] };
  const { cudaVersionList: _versions, ...ranges } = wireLimits;
  const limits = applyWireLimits(base, ranges);
  const localVolumeSizeGB = limits.localVolumeSizeGB.free;
  const parsed =
    use === 'create'
      ? parseCreateBody({ endpoint: fields }, { localVolumeSizeGB })
      : parseUpdateBody({ ...fields, id: 'checked-locally' }, { localVolumeSizeGB });
  const patch = parsed.ok ? parsed.value : parsed.partial;
  if (patch === undefined) return [];
  const spec = createSpec('checked-locally', limits, 'patch' in patch ? patch.patch : patch);
  const catalog: ValidationCatalog = {
    productIds: new Set(spec.productIds),
    networkStorages: new Map(
      spec.volumes.flatMap((v) => (v.type === 'network' ? [[v.storageId, spec.clusterId]] : [])),
    ),
    credentialIds: new Set(spec.image.authId === '' ? [] : [spec.image.authId]),
  };
  return validateSpec(spec, limits, catalog)
    .filter((issue) => !CATALOGUE_REASONS.has(issue.reason))
    .map((issue) => ({
      field: wireField(issue.field),
      reason: issue.reason,
      message: wireMessage(issue.message),
    }))
    .filter((issue) => given(fields, issue.field));
}

/** Whether the wire path `field` (`workerConfig.minNum`, `envs.0.key`) is in `fields`. */
function given(fields: Record<string, unknown>, field: string): boolean {
  let at: unknown = fields;
  for (const key of field.split('.')) {
    if (Array.isArray(at) && at.length === 1 && !/^\d+$/.test(key)) at = at[0];
    if (typeof at !== 'object' || at === null || !Object.hasOwn(at, key)) return false;
    at = (at as Record<string, unknown>)[key];
  }
  return true;
}
