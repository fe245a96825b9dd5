import { afterEach, describe, expect, it } from 'vitest';
import { makeHarness, runCommand } from '../../test/support/cli-harness.js';
import { sampleWireEndpoint } from '../../test/support/wire-fixtures.js';
import { makeEndpointsCommand } from './endpoints.js';

afterEach(() => {
  process.exitCode = undefined;
});

const endpoints = [
  sampleWireEndpoint('8000', { id: 'ep-1', name: 'echo', appName: 'hello' }),
  sampleWireEndpoint('8000', { id: 'ep-2', name: 'twin', appName: 'twin-a' }),
  sampleWireEndpoint('8000', { id: 'ep-3', name: 'twin', appName: 'twin-b' }),
];

function harness() {
  return makeHarness({
    routes: {
      'GET endpoints': { body: { endpoints, total: endpoints.length } },
      'GET endpoint': {
        respond: (r) => {
          const found = endpoints.find((e) => e.id === r.query.id);
          return found === undefined
            ? Response.json(
                { code: 404, reason: 'ENDPOINT_NOT_FOUND', message: 'no such endpoint', metadata: {} },
                { status: 404 },
              )
            : Response.json({ endpoint: { ...found, ports: [{ port: 8000 }] } });
        },
      },
      'POST endpoint/stop': { body: {} },
    },
  });
}

describe('an endpoint named by id, appName or name', () => {
  it('is found by its id with one request', async () => {
    const h = harness();
    await runCommand(makeEndpointsCommand(h.deps), ['get', 'ep-1']);
    expect(h.out()).toContain('App name:');
    expect(h.requests).toHaveLength(1);
  });

  it('is found by its appName and by its name', async () => {
    for (const ref of ['hello', 'echo']) {
      const h = harness();
      await runCommand(makeEndpointsCommand(h.deps), ['get', ref]);
      expect(h.err()).toBe('');
      expect(h.out()).toMatch(/^ID: +ep-1$/m);
    }
  });

  it('acts on the endpoint it names (stop by appName)', async () => {
    const h = makeHarness({
      routes: {
        'GET endpoints': { body: { endpoints, total: endpoints.length } },
        'POST endpoint/stop': {
          respond: (r) =>
            (r.body as { id: string }).id === 'ep-1'
              ? Response.json({})
              : Response.json(
                  { code: 404, reason: 'ENDPOINT_NOT_FOUND', message: 'no', metadata: {} },
                  { status: 404 },
                ),
        },
      },
    });
    await runCommand(makeEndpointsCommand(h.deps), ['stop', 'hello']);
    expect(h.out()).toBe('stopped endpoint ep-1\n');
  });

  it('is refused when two endpoints share the name, naming their ids', async () => {
    const h = harness();
    await runCommand(makeEndpointsCommand(h.deps), ['get', 'twin']);
    expect(h.err()).toBe('error: 2 endpoints are named "twin" (ep-2, ep-3): use an id or an appName\n');
    expect(process.exitCode).toBe(1);
  });
});
