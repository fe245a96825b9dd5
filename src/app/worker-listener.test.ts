// The worker-facing listener on loopback (the local runtime's address), over real HTTP on port 0: the handler's
// routes are served, anything it leaves is 404, and a handler that throws is a 500, not a hung request.
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { firstHost } from '../runtime/docker/subnet-pool.js';
import { workerFacingBaseUrl } from './worker-facing-url.js';
import { type RunningWorkerListener, startWorkerListener } from './worker-listener.js';

describe('the worker-facing listener', () => {
  let listener: RunningWorkerListener | undefined;
  afterEach(async () => {
    await listener?.close();
  });

  it('serves what its handler takes, 404 for the rest, 500 when the handler fails', async () => {
    listener = await startWorkerListener({
      address: { host: '127.0.0.1', port: 0 },
      logger: pino({ level: 'silent' }),
      handler: async (request, response) => {
        if (request.url === '/boom') throw new Error('broken');
        if (!request.url?.startsWith('/v2/job-take/')) return false;
        response.end('{"id":"job-1"}');
        return true;
      },
    });
    const base = workerFacingBaseUrl({ runtime: 'local', address: '0.0.0.0', port: listener.address.port });
    const get = async (path: string) => {
      const response = await fetch(`${base}${path}`);
      return [response.status, await response.text()];
    };
    expect(await get('/v2/job-take/w-1?job_in_progress=0')).toEqual([200, '{"id":"job-1"}']);
    expect(await get('/v2/sdxl/run')).toEqual([404, '{"error":"not a worker route"}']);
    expect(await get('/boom')).toEqual([500, '{"error":"internal error"}']);
  });
});

describe('firstHost', () => {
  it.each([
    ['172.31.1.0/28', '172.31.1.1'],
    ['10.0.0.0/8', '10.0.0.1'],
    ['172.31.1.4/31', undefined],
    ['fd00::/64', undefined],
  ])('%s -> %s', (subnet, host) => {
    expect(firstHost(subnet)).toBe(host);
  });
});
