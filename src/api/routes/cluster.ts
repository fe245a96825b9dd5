/**
 * `GET cluster` (Corral's own, admin only): the replicas on this database, which one leads and since when
 * (docs/operations.md). A key that is not an admin key gets 401 UNAUTHENTICATED, as for /metrics.
 */
import type { FastifyInstance } from 'fastify';
import { toWireCluster } from '../../contract/cluster.js';
import { ApiError } from '../../errors/api-catalogue.js';
import type { ClusterService } from '../../service/cluster-service.js';

export function registerClusterRoute(api: FastifyInstance, cluster: ClusterService): void {
  api.get('/cluster', async (request) => {
    if (!request.principal.admin)
      throw new ApiError('UNAUTHENTICATED', 'GET cluster needs an admin API key; this key is not one');
    return toWireCluster(await cluster.status());
  });
}
