/** Listening on the configured addresses, and the port bound where the configuration said 0 (any free port). */
import type { Server } from 'node:http';
import type { FastifyInstance } from 'fastify';

export /** The bound port, which differs from the configured one when that was 0. */
function listeningPort(app: FastifyInstance): number {
  const address = app.server.address();
  return typeof address === 'object' && address !== null ? address.port : 0;
}

export function listen(server: Server, address: { host: string; port: number }): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(address.port, address.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/** The port the server listens on; undefined while it does not (not yet, or closed). */
export function boundPort(server: Server): number | undefined {
  const address = server.address();
  return typeof address === 'object' && address !== null ? address.port : undefined;
}
