/**
 * `GET billing/endpoints` (RunPod's billing route, issue 32): its query read into the ledger's `UsageQuery`, and its
 * answer, RunPod's fields (`time`, `amount`, `timeBilledMs`, `diskSpaceBilledGb`, `endpointId` or `gpuTypeId`)
 * with Corral's own (`ownerId`, `gpuSeconds` per state, `currency`). Times are ISO 8601 (UTC).
 */

import { ApiError } from '../errors/api-catalogue.js';
import type { UsageBucket, UsageQuery, UsageRow, UsageState } from '../ports/usage.js';
import { readOptional } from './query.js';

type Query = Record<string, string | string[] | undefined>;

const BUCKETS: readonly UsageBucket[] = ['hour', 'day', 'week', 'month'];
const GROUPINGS = { endpointId: 'endpoint', gpuTypeId: 'gpu' } as const;
type WireGrouping = keyof typeof GROUPINGS;
const DAY_MS = 24 * 3_600_000;
/** Without startTime: the week before endTime. */
const DEFAULT_SPAN_MS = 7 * DAY_MS;
/** The longest range one query may ask (hour buckets over it stay a few thousand rows per key). */
const MAX_BILLING_RANGE_MS = 366 * DAY_MS;

export interface BillingQuery {
  usage: Omit<UsageQuery, 'ownerId'>;
  /** The key each row names its group by. */
  groupKey: WireGrouping;
  /** An admin's filter by owner. */
  ownerId?: string;
}

export interface WireBillingRow {
  time: string;
  amount: number;
  timeBilledMs: number;
  /** Corral bills no disk: always 0. */
  diskSpaceBilledGb: number;
  endpointId?: string;
  gpuTypeId?: string;
  ownerId: string | null;
  gpuSeconds: Record<UsageState, number>;
  currency: string;
}

export function readBillingQuery(query: Query, now: number): BillingQuery {
  const bucket = readOptional(query, 'bucketSize') ?? 'hour';
  if (!(BUCKETS as readonly string[]).includes(bucket))
    throw invalid('bucketSize', `bucketSize must be one of ${BUCKETS.join(', ')}, got "${bucket}"`);
  const grouping = readOptional(query, 'grouping') ?? 'endpointId';
  if (!(grouping in GROUPINGS))
    throw invalid('grouping', `grouping must be endpointId or gpuTypeId, got "${grouping}"`);
  const to = readTime(query, 'endTime') ?? now;
  const from = readTime(query, 'startTime') ?? to - DEFAULT_SPAN_MS;
  if (from >= to) throw invalid('startTime', 'startTime must be before endTime');
  if (to - from > MAX_BILLING_RANGE_MS) throw invalid('startTime', 'the range may span at most 366 days');
  const endpointId = readOptional(query, 'endpointId');
  const ownerId = readOptional(query, 'ownerId');
  const groupKey = grouping as WireGrouping;
  return {
    usage: {
      from,
      to,
      bucket: bucket as UsageBucket,
      grouping: GROUPINGS[groupKey],
      ...(endpointId === undefined ? {} : { endpointId }),
    },
    groupKey,
    ...(ownerId === undefined ? {} : { ownerId }),
  };
}

export function toWireBillingRow(row: UsageRow, groupKey: WireGrouping): WireBillingRow {
  return {
    time: new Date(row.time).toISOString(),
    amount: row.amount,
    timeBilledMs: row.timeBilledMs,
    diskSpaceBilledGb: 0,
    [groupKey]: row.key,
    ownerId: row.ownerId,
    gpuSeconds: row.gpuSeconds,
    currency: row.currency,
  };
}

function readTime(query: Query, name: string): number | undefined {
  const raw = readOptional(query, name);
  if (raw === undefined) return undefined;
  const at = Date.parse(raw);
  if (!Number.isFinite(at)) throw invalid(name, `${name} must be an ISO 8601 time, got "${raw}"`);
  return at;
}

function invalid(field: string, message: string): ApiError {
  return new ApiError('INVALID_QUERY', message, { field });
}
