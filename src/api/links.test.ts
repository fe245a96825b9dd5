import { describe, expect, it } from 'vitest';
import { EndpointLinks } from './links.js';

const links = (publicUrl?: string) =>
  new EndpointLinks({
    domain: 'localhost',
    gatewayPort: () => 8123,
    publicUrl,
    apiUrl: () => 'http://127.0.0.1:8080',
  });

describe("the jobs API's base (the OpenAPI document's gateway server)", () => {
  it('is the name the API was reached by, on the gateway port', () => {
    expect(links().gatewayBase('corral.example.com')).toBe('http://corral.example.com:8123');
    expect(links().gatewayBase('[::1]')).toBe('http://[::1]:8123');
    expect(links().gatewayBase('::1')).toBe('http://[::1]:8123');
  });

  it("is the public base's origin where one is set", () => {
    expect(links('https://gpu.example.com/').gatewayBase('10.0.0.5')).toBe('https://gpu.example.com');
  });
});

describe("an endpoint's jobs URLs (/v2 on the gateway)", () => {
  it('names the endpoint by its id on the gateway base, with the status route as a template', () => {
    expect(links().jobUrls('k3x9q2m7v1b4n8c5', '127.0.0.1')).toEqual({
      run: 'http://127.0.0.1:8123/v2/k3x9q2m7v1b4n8c5/run',
      runsync: 'http://127.0.0.1:8123/v2/k3x9q2m7v1b4n8c5/runsync',
      status: 'http://127.0.0.1:8123/v2/k3x9q2m7v1b4n8c5/status/{jobId}',
      health: 'http://127.0.0.1:8123/v2/k3x9q2m7v1b4n8c5/health',
    });
    expect(links('https://gpu.example.com/').jobUrls('e1', '10.0.0.5').runsync).toBe(
      'https://gpu.example.com/v2/e1/runsync',
    );
  });
});
