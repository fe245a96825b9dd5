// The request `corral endpoints get` prints to paste: with the key the gateway needs, unless the endpoint is public.
import { describe, expect, it } from 'vitest';
import { sampleWireEndpoint } from '../../test/support/wire-fixtures.js';
import { exampleRequest, formatEndpoint, formatEndpointList } from './endpoint-format.js';

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

describe('formatEndpoint', () => {
  it.each([
    [0, 0, 'off (stopped at the idle timeout)'],
    [600, 0, 'frozen 600s'],
    [600, 3600, 'frozen 600s, then suspended 3600s'],
  ])('shows keepFrozen %d and keepSuspended %d as %j', (keepFrozen, keepSuspended, text) => {
    const endpoint = sampleWireEndpoint(8000);
    const shown = formatEndpoint({
      ...endpoint,
      workerConfig: { ...endpoint.workerConfig, keepFrozen, keepSuspended },
    });
    expect(shown).toMatch(new RegExp(`^Idle tiers: +${text.replace(/[()]/g, '\\$&')}$`, 'm'));
  });
});

describe("a queue endpoint's calls", () => {
  const jobUrls = {
    run: 'http://127.0.0.1:8000/v2/ep-1/run',
    runsync: 'http://127.0.0.1:8000/v2/ep-1/runsync',
    status: 'http://127.0.0.1:8000/v2/ep-1/status/{jobId}',
    health: 'http://127.0.0.1:8000/v2/ep-1/health',
  };
  const queue = sampleWireEndpoint(8000, { type: 'queue', jobUrls });

  it('shows its type and /run and /runsync first, with a curl that posts an input to /runsync', () => {
    const lines = formatEndpoint(queue).split('\n');
    const at = (label: string) => lines.findIndex((line) => line.startsWith(`${label}:`));
    expect(lines[at('Type')]).toMatch(/^Type: +queue$/);
    expect(lines[at('Run')]).toMatch(/ POST http:\/\/127\.0\.0\.1:8000\/v2\/ep-1\/run$/);
    expect(at('Run sync')).toBe(at('Run') + 1);
    expect(lines[at('Status')]).toContain('GET http://127.0.0.1:8000/v2/ep-1/status/{jobId}');
    expect(lines[at('Call')]).toMatch(
      /curl -sS -X POST -H "Authorization: Bearer \$CORRAL_API_KEY" -H 'Content-Type: application\/json' -d '\{"input": \{\}\}' http:\/\/127\.0\.0\.1:8000\/v2\/ep-1\/runsync$/,
    );
    // Its own URL answers nothing: not shown.
    expect(at('URL')).toBe(-1);
    expect(formatEndpoint(queue)).not.toContain(queue.url);
  });

  it('leaves an http endpoint as it was: its URL and its curl, and its type', () => {
    const http = sampleWireEndpoint(8000, { jobUrls });
    const shown = formatEndpoint(http);
    expect(shown).toMatch(/^Type: +http$/m);
    expect(shown).toMatch(/^URL: +http:\/\/echo\.localhost:8081$/m);
    expect(shown).toMatch(
      /^Call: +curl -H "Authorization: Bearer \$CORRAL_API_KEY" http:\/\/echo\.localhost:8081\/$/m,
    );
    expect(shown).not.toContain('/v2/');
  });

  it('lists a queue endpoint at its /runsync URL', () => {
    const [head, row] = formatEndpointList([queue], 1).split('\n');
    expect(head).toMatch(/ TYPE /);
    expect(row).toMatch(/ queue .* http:\/\/127\.0\.0\.1:8000\/v2\/ep-1\/runsync$/);
  });
});
