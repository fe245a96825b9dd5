/** `GET quota` (Corral's own): the caller's quotas and what it uses of each now, and the rates it is held to. */
import type { FastifyInstance } from 'fastify';
import { toWireQuotaReport, type WireRates } from '../../contract/quota.js';
import type { QuotaService } from '../../service/quota-service.js';

export function registerQuotaRoute(api: FastifyInstance, quotas: QuotaService, rates?: WireRates): void {
  api.get('/quota', async (request) => toWireQuotaReport(await quotas.report(request.principal), rates));
}
