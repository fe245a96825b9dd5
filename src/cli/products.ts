/** `corral products`: the GPU products endpoints can ask for in `products[].id`. */
import type { Command } from 'commander';
import type { WireProduct } from '../client/index.js';
import { addClientOptions, newCommand, runWithClient } from './client-options.js';
import type { CliDeps } from './deps.js';
import { formatTable } from './table.js';

export function makeProductsCommand(deps: CliDeps): Command {
  return addClientOptions(
    newCommand('products', deps).description('list the GPU products of this server'),
  ).action((_opts, command: Command) =>
    runWithClient(deps, command, async ({ client, output }) => {
      const products = await client.listProducts();
      output({ products }, () => formatProducts(products));
    }),
  );
}

export function formatProducts(products: readonly WireProduct[]): string {
  if (products.length === 0) return 'No GPU products.\n';
  return formatTable(
    ['ID', 'NAME', 'GPU', { header: 'MEMORY', align: 'right' }, { header: 'FREE', align: 'right' }],
    products.map((p) => [p.id, p.name, p.gpuModel, `${p.gpuMemoryGB} GB`, `${p.gpusFree}/${p.gpusTotal}`]),
  );
}
