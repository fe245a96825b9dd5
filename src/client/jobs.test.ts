// `CorralJobsClient` against a real HTTP server on port 0 standing for the gateway's documented jobs wire format
// (test/support/jobs-gateway.ts): routes, the `wait` of runsync, RunPod's /v2 base URL form, and shape checks.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type JobsGatewayStandIn, startJobsGatewayStandIn } from '../../test/support/jobs-gateway.js';
import { CorralProtocolError } from './errors.js';
import { CorralJobsClient } from './jobs.js';

describe('CorralJobsClient', () => {
  let gateway: JobsGatewayStandIn;

  beforeEach(async () => {
    gateway = await startJobsGatewayStandIn();
  });
  afterEach(async () => {
    await gateway.close();
  });

  it('sends runsync with its wait in ms, and takes the RunPod base URL form ending in /v2', async () => {
    const client = new CorralJobsClient({ baseUrl: `${gateway.base}/v2/`, apiKey: gateway.key });
    expect(client.baseUrl).toBe(gateway.base);
    expect(await client.runSync('sdxl', { input: { a: 1 } }, 5_000)).toEqual({
      id: 'job-1',
      status: 'IN_QUEUE',
    });
    expect(gateway.requests[0]).toMatchObject({
      method: 'POST',
      path: '/v2/sdxl/runsync',
      query: { wait: '5000' },
      authorization: `Bearer ${gateway.key}`,
    });
  });

  it('encodes the endpoint and job in the path', async () => {
    const client = new CorralJobsClient({ baseUrl: gateway.base, apiKey: gateway.key });
    await expect(client.status('sdxl', 'a/b')).rejects.toMatchObject({ status: 404 });
    expect(gateway.requests[0]?.path).toBe('/v2/sdxl/status/a%2Fb');
  });

  it('refuses an answer that is not a job', async () => {
    const client = new CorralJobsClient({
      baseUrl: gateway.base,
      apiKey: gateway.key,
      fetch: async () => new Response(JSON.stringify({ id: 'x', status: 'DONE' }), { status: 200 }),
    });
    await expect(client.status('sdxl', 'x')).rejects.toThrow(CorralProtocolError);
    expect(() => new CorralJobsClient({ baseUrl: 'ftp://x', apiKey: 'k' })).toThrow(
      'invalid Corral gateway URL',
    );
  });
});
