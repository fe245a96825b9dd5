// The request `corral endpoints get` prints to paste: with the key the gateway needs, unless the endpoint is public.
import { describe, expect, it } from 'vitest';
import { sampleWireEndpoint } from '../../test/support/wire-fixtures.js';
import { exampleRequest, formatEndpointList } from './endpoint-format.js';

describe('exampleRequest', () => {
  it('sends the key the CLI uses, except to a public endpoint', () => {
    const endpoint = sampleWireEndpoint(8000);
    expect(exampleRequest(endpoint)).toBe(
      'curl -H "Authorization: Bearer $CORRAL_API_KEY" http://echo.localhost:8081/',
    );
    expect(exampleRequest({ ...endpoint, public: true })).toBe('curl http://echo.localhost:8081/');
  });
});

describe('formatEndpointList', () => {
  it('counts ready workers of those meant to serve, and the failed ones apart', () => {
    const worker = (id: string, state: string, healthy: boolean) => ({
      id,
      state: { state, error: state === 'failed' ? 'CRASH_LOOP' : '', message: '' },
      log: '',
      metrics: '',
      healthy,
    });
    const endpoint = {
      ...sampleWireEndpoint(8000),
      workers: [
        worker('w1', 'running', true),
        worker('w2', 'starting', false),
        worker('w3', 'failed', false),
        worker('w4', 'failed', false),
      ],
    };
    const [, row] = formatEndpointList([endpoint], 1).split('\n');
    expect(row).toMatch(/ 1\/2 \(2 failed\) /);
    const healthy = { ...endpoint, workers: [worker('w1', 'running', true)] };
    expect(formatEndpointList([healthy], 1).split('\n')[1]).toMatch(/ 1\/1 /);
    // Idle workers resting in a tier are not meant to serve until woken: counted apart.
    const resting = {
      ...endpoint,
      workers: [worker('w1', 'frozen', false), worker('w2', 'suspended', false)],
    };
    expect(formatEndpointList([resting], 1).split('\n')[1]).toMatch(/ 0\/0 \(1 frozen, 1 suspended\) /);
  });
});
