/** `GET endpoint/limit` and `GET products`: what this server lets an endpoint ask for. */
import type { FastifyInstance } from 'fastify';
import { toWireLimits } from '../../contract/limits.js';
import type { WireProduct } from '../../contract/wire.js';
import type { AppOptions } from '../app.js';

export function registerCatalogRoutes(api: FastifyInstance, o: AppOptions): void {
  api.get('/endpoint/limit', async () => toWireLimits(o.catalog.limits()));

  api.get('/products', async () => {
    const products: WireProduct[] = o.catalog.products();
    return { products };
  });
}
