/**
 * `GET billing/endpoints` (RunPod's billing route, issue 32): the usage ledger's rows by bucket and endpoint (or GPU
 * type). An owner's key sees its own workers' usage; an admin key sees every owner's and may name one (`ownerId`).
 */
import type { FastifyInstance } from 'fastify';
import { readBillingQuery, toWireBillingRow, type WireBillingRow } from '../../contract/billing.js';
import type { Clock } from '../../ports/clock.js';
import type { UsageReader } from '../../ports/usage.js';

export function registerBillingRoute(api: FastifyInstance, usage: UsageReader, clock: Clock): void {
  api.get('/billing/endpoints', async (request): Promise<WireBillingRow[]> => {
    const { principal } = request;
    const query = readBillingQuery(request.query as Record<string, string>, clock());
    const ownerId = principal.admin ? query.ownerId : principal.ownerId;
    const rows = await usage.query({ ...query.usage, ...(ownerId === undefined ? {} : { ownerId }) });
    return rows.map((row) => toWireBillingRow(row, query.groupKey));
  });
}
