import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { GatewayRouter } from './router.js';

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
});

/** A real server on port 0 in front of a router whose handlers answer their own name. */
async function routed(routes: ConstructorParameters<typeof GatewayRouter>[0]['routes']): Promise<string> {
  const router = new GatewayRouter({
    routes,
    endpoints: {
      handleRequest: (_req, res) => res.end('endpoints'),
      handleUpgrade: (_req, socket) => socket.end('HTTP/1.1 400 Bad Request\r\nx-by: endpoints\r\n\r\n'),
    },
  });
  const server = createServer(router.handleRequest);
  server.on('upgrade', router.handleUpgrade);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const jobs = {
  claims: (req: IncomingMessage) => req.url?.startsWith('/v2/') === true,
  handleRequest: (_req: IncomingMessage, res: import('node:http').ServerResponse) => res.end('jobs'),
};

describe('GatewayRouter', () => {
  it('sends what a route claims to it and everything else to the endpoints', async () => {
    const url = await routed([jobs]);
    expect(await (await fetch(`${url}/v2/abc/run`)).text()).toBe('jobs');
    expect(await (await fetch(`${url}/v1/models`)).text()).toBe('endpoints');
  });

  it('with no route of its own, every request is the endpoints', async () => {
    const url = await routed([]);
    expect(await (await fetch(`${url}/v2/abc/run`)).text()).toBe('endpoints');
  });

  it('an upgrade a route cannot take goes to the endpoints', async () => {
    const url = await routed([jobs]);
    const { request } = await import('node:http');
    const header = await new Promise<string | undefined>((resolve, reject) => {
      const req = request(`${url}/v2/abc/ws`, { headers: { connection: 'upgrade', upgrade: 'websocket' } });
      req.on('response', (res) => resolve(res.headers['x-by'] as string | undefined));
      req.on('upgrade', () => reject(new Error('unexpected upgrade')));
      req.on('error', reject);
      req.end();
    });
    expect(header).toBe('endpoints');
  });
});
