/**
 * `GET gpus` (Corral's own): the GPU inventory, which worker holds each GPU and the workers waiting for one. Any
 * key may read it: `GET products` already tells every key each product's GPUs and how many are free, so the
 * inventory is no secret; whose worker holds a GPU is, and only an admin key sees other owners' workers.
 */
import type { FastifyInstance } from 'fastify';
import type { WireGpus } from '../../contract/gpus.js';
import type { GpuReport, GpuReportService } from '../../service/gpu-report.js';

export function registerGpuRoute(api: FastifyInstance, gpus: GpuReportService): void {
  api.get('/gpus', async (request): Promise<WireGpus> => toWireGpus(await gpus.report(request.principal)));
}

export function toWireGpus(report: GpuReport): WireGpus {
  return {
    scope: report.scope,
    gpus: report.gpus.map((g) => ({
      index: g.index,
      uuid: g.uuid,
      productId: g.productId,
      model: g.model,
      memoryGB: g.memoryGB,
      simulated: g.simulated,
      ...(g.node === undefined ? {} : { node: g.node }),
      busy: g.busy,
      heldBy: g.heldBy && { ...g.heldBy },
    })),
    waiting: report.waiting.map((w) => ({
      workerId: w.workerId,
      endpointId: w.endpointId,
      endpointName: w.endpointName,
      ownerId: w.ownerId,
      since: new Date(w.since).toISOString(),
      gpuCount: w.gpuCount,
      productIds: [...w.productIds],
      reason: w.reason,
    })),
  };
}
