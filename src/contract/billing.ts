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
/** RunPod's two groupings, then Corral's own: by owner (an admin's view) and by worker state. */
const GROUPINGS = { endpointId: 'endpoint', gpuTypeId: 'gpu', ownerId: 'owner', state: 'state' } as const;
export type WireGrouping = keyof typeof GROUPINGS;
export const WIRE_GROUPINGS = Object.keys(GROUPINGS) as readonly WireGrouping[];
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
  /** With grouping=state (Corral's own): the state the row's time was spent in. */
  state?: UsageState;
  ownerId: string | null;
  gpuSeconds: Record<UsageState, number>;
  currency: string;
}

/** The route's query as a client sends it (every field optional; times ISO 8601). */
export interface WireBillingParams {
  bucketSize?: UsageBucket;
  grouping?: WireGrouping;
  startTime?: string;
  endTime?: string;
  endpointId?: string;
  /** Admin keys only. */
  ownerId?: string;
}

export function readBillingQuery(query: Query, now: number): BillingQuery {
  const bucket = readOptional(query, 'bucketSize') ?? 'hour';
  if (!(BUCKETS as readonly string[]).includes(bucket))
    throw invalid('bucketSize', `bucketSize must be one of ${BUCKETS.join(', ')}, got "${bucket}"`);
  const grouping = readOptional(query, 'grouping') ?? 'endpointId';
  if (!(grouping in GROUPINGS))
    throw invalid('grouping', `grouping must be one of ${WIRE_GROUPINGS.join(', ')}, got "${grouping}"`);
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
    ownerId: row.ownerId,
    [groupKey]: row.key,
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
