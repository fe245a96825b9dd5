import { describe, expect, it } from 'vitest';
import { addressKind, canonicalHost, hostKind } from './address-kind.js';
import { pinnedLookup, resolvePublic } from './resolve.js';

describe('which hosts are not public', () => {
  it.each([
    ['127.0.0.1:5000', '127.0.0.1', 'loopback'],
    ['2130706433:5000', '127.0.0.1', 'loopback'],
    ['0x7f000001', '127.0.0.1', 'loopback'],
    ['0x7f.1:80', '127.0.0.1', 'loopback'],
    ['0177.0.0.1:5000', '127.0.0.1', 'loopback'],
    ['127.1', '127.0.0.1', 'loopback'],
    ['017700000001', '127.0.0.1', 'loopback'],
    ['0xa9.0xfe.0xa9.0xfe', '169.254.169.254', 'link-local'],
    ['10.0.0.1:443', '10.0.0.1', 'private'],
    ['[::1]:5000', '::1', 'loopback'],
    ['[::ffff:127.0.0.1]:5000', '::ffff:7f00:1', 'loopback'],
    ['[::ffff:7f00:1]', '::ffff:7f00:1', 'loopback'],
    ['[::ffff:192.168.1.1]', '::ffff:c0a8:101', 'private'],
    ['[fe80::1]', 'fe80::1', 'link-local'],
    ['[fd00::1]:5000', 'fd00::1', 'unique-local'],
    ['LOCALHOST:5000', 'localhost', 'loopback'],
    ['registry.localhost', 'registry.localhost', 'loopback'],
    ['localhost.', 'localhost', 'loopback'],
  ])('%s reads as %s, a %s host, before any look-up', (written, host, kind) => {
    expect(canonicalHost(written)?.host).toBe(host);
    expect(hostKind(host)).toBe(kind);
  });

  it.each(['ghcr.io', 'registry-1.docker.io:443', '8.8.8.8', '[2606:4700::1111]'])(
    '%s is public',
    (written) => {
      const host = canonicalHost(written)?.host ?? '';
      expect(host).not.toBe('');
      expect(hostKind(host)).toBeUndefined();
    },
  );

  it.each(['', 'a/b', 'user@host', 'host?x', 'ho st', '1.2.3.4.5', '[zz::1]'])(
    '%j is not a host',
    (written) => {
      expect(canonicalHost(written)).toBeUndefined();
    },
  );

  it('throws for a name given as an address', () => {
    expect(() => addressKind('example.com')).toThrow('not an IP address');
  });

  it('resolves a name once, refusing it when any address is private, and pins a connection to the first', async () => {
    const lookups: string[] = [];
    const lookupAll = async (name: string) => {
      lookups.push(name);
      return name === 'mixed.example'
        ? [
            { address: '93.184.216.34', family: 4 as const },
            { address: '10.1.2.3', family: 4 as const },
          ]
        : [{ address: '93.184.216.34', family: 4 as const }];
    };
    expect(await resolvePublic('mixed.example', lookupAll)).toMatchObject({
      kind: 'private',
      address: '10.1.2.3',
      addressKind: 'private',
    });
    const resolved = await resolvePublic('public.example', lookupAll);
    expect(resolved).toEqual({ kind: 'public', address: { address: '93.184.216.34', family: 4 } });
    expect(lookups).toEqual(['mixed.example', 'public.example']);
    const lookup = pinnedLookup({ address: '93.184.216.34', family: 4 });
    const answers: unknown[] = [];
    lookup('rebound.example', {}, (...args: unknown[]) => answers.push(args));
    lookup('rebound.example', { all: true }, (...args: unknown[]) => answers.push(args));
    expect(answers).toEqual([
      [null, '93.184.216.34', 4],
      [null, [{ address: '93.184.216.34', family: 4 }]],
    ]);
  });
});
