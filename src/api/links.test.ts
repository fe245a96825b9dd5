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
