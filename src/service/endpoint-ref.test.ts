import { describe, expect, it } from 'vitest';
import { ambiguousRefMessage, type EndpointRefKeys, resolveEndpointRef } from './endpoint-ref.js';

const keys = (e: EndpointRefKeys) => e;
const endpoint = (id: string, appName: string, name: string): EndpointRefKeys => ({ id, appName, name });

describe('resolveEndpointRef: id, else appName, else the only endpoint with the name', () => {
  const sdxl = endpoint('k3x9q2m7v1b4n8c5', 'k3x9q2m7v1b4n8c5', 'sdxl');
  const chat = endpoint('p0o9i8u7y6t5r4e3', 'chat', 'llama');

  it('finds an endpoint by its name when it has no appName of its own', () => {
    expect(resolveEndpointRef('sdxl', [sdxl, chat], keys)).toEqual({ kind: 'found', endpoint: sdxl });
  });

  it('finds by id and by appName', () => {
    expect(resolveEndpointRef(chat.id, [sdxl, chat], keys)).toEqual({ kind: 'found', endpoint: chat });
    expect(resolveEndpointRef('chat', [sdxl, chat], keys)).toEqual({ kind: 'found', endpoint: chat });
  });

  it("prefers an id to an appName, and an appName to another endpoint's name", () => {
    const namedLikeAnId = endpoint('a1', 'a1-app', sdxl.id);
    expect(resolveEndpointRef(sdxl.id, [namedLikeAnId, sdxl], keys)).toEqual({
      kind: 'found',
      endpoint: sdxl,
    });
    const namedChat = endpoint('b2', 'b2', 'chat');
    expect(resolveEndpointRef('chat', [namedChat, chat], keys)).toEqual({ kind: 'found', endpoint: chat });
  });

  it('refuses to guess between two endpoints with the name, and names their ids', () => {
    const twin = endpoint('z9', 'z9', 'sdxl');
    expect(resolveEndpointRef('sdxl', [sdxl, chat, twin], keys)).toEqual({
      kind: 'ambiguous',
      ids: [sdxl.id, 'z9'],
    });
    expect(ambiguousRefMessage('sdxl', [sdxl.id, 'z9'])).toBe(
      `2 endpoints are named "sdxl" (${sdxl.id}, z9): use an id or an appName`,
    );
  });

  it('finds nothing among no candidates, or none that match', () => {
    expect(resolveEndpointRef('sdxl', [], keys)).toEqual({ kind: 'none' });
    expect(resolveEndpointRef('flux', [sdxl, chat], keys)).toEqual({ kind: 'none' });
  });
});
