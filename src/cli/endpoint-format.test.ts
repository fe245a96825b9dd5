// The request `corral endpoints get` prints to paste: with the key the gateway needs, unless the endpoint is public.
import { describe, expect, it } from 'vitest';
import { sampleWireEndpoint } from '../../test/support/wire-fixtures.js';
import { exampleRequest } from './endpoint-format.js';

describe('exampleRequest', () => {
  it('sends the key the CLI uses, except to a public endpoint', () => {
    const endpoint = sampleWireEndpoint(8000);
    expect(exampleRequest(endpoint)).toBe(
      'curl -H "Authorization: Bearer $CORRAL_API_KEY" http://echo.localhost:8081/',
    );
    expect(exampleRequest({ ...endpoint, public: true })).toBe('curl http://echo.localhost:8081/');
  });
});
