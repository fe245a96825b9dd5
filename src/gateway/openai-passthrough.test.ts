/**
 * The gateway's OpenAI route on http endpoints (openai-passthrough.ts): which requests it claims, by the routing
 * view alone, and the path their workers see; each claimed request's endpoint is looked up once.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { sampleEndpoint } from '../../test/support/fixtures.js';
import type { Endpoint } from '../domain/endpoint.js';
import { OpenAIPassthrough } from './openai-passthrough.js';

const http = { ...sampleEndpoint({ patch: { appName: 'llm' } }), id: 'ep-http' };
const queue = { ...sampleEndpoint({ patch: { appName: 'jobs', type: 'queue' } }), id: 'ep-queue' };
const endpoints: Endpoint[] = [http, queue];

function passthrough(served: string[], lookups: string[] = []) {
  return new OpenAIPassthrough({
    routing: {
      endpointById: (id) => {
        lookups.push(id);
        return endpoints.find((e) => e.id === id);
      },
      endpointByAppName: (appName) => {
        lookups.push(appName);
        return endpoints.find((e) => e.spec.appName === appName);
      },
    },
    domain: 'corral.localhost',
    endpoints: (req) => served.push(req.url ?? ''),
  });
}

const request = (url: string, host = '127.0.0.1:8000') => ({ url, headers: { host } }) as IncomingMessage;

describe("an http endpoint's OpenAI route", () => {
  it('is claimed by the id or appName of an http endpoint, and reaches its workers as /v1/...', () => {
    const served: string[] = [];
    const lookups: string[] = [];
    const route = passthrough(served, lookups);
    for (const url of ['/v2/ep-http/openai/v1/chat/completions', '/v2/LLM/openai/v1/models?x=1']) {
      const req = request(url);
      expect(route.claims(req)).toBe(true);
      route.handleRequest(req, {} as ServerResponse);
    }
    expect(served).toEqual(['/e/llm/v1/chat/completions', '/e/llm/v1/models?x=1']);
    // Looked up by `claims` alone: by id, then (for an appName) by appName.
    expect(lookups).toEqual(['ep-http', 'LLM', 'llm']);
  });

  it("leaves a queue endpoint's (jobs), an unknown ref, another route and an endpoint's own Host to others", () => {
    const route = passthrough([]);
    expect(route.claims(request('/v2/ep-queue/openai/v1/chat/completions'))).toBe(false);
    expect(route.claims(request('/v2/jobs/openai/v1/models'))).toBe(false);
    expect(route.claims(request('/v2/unknown/openai/v1/models'))).toBe(false);
    expect(route.claims(request('/v2/ep-http/run'))).toBe(false);
    expect(route.claims(request('/v2/ep-http/openaix/v1'))).toBe(false);
    expect(route.claims(request('/v2/ep-http/openai/v1/models', 'llm.corral.localhost:8000'))).toBe(false);
  });
});
