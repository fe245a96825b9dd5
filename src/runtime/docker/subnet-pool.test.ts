/** The worker network subnet chosen from the pool, by table. */
import { describe, expect, it } from 'vitest';
import {
  firstFreeSubnet,
  formatIpv4Block,
  parseIpv4Cidr,
  routedSubnets,
  shadowingRoutes,
} from './subnet-pool.js';

describe('parseIpv4Cidr', () => {
  it.each([
    ['172.31.0.0/16', '172.31.0.0/16'],
    ['10.1.2.3/24', '10.1.2.0/24'],
    [' 192.168.0.0/20 ', '192.168.0.0/20'],
    ['0.0.0.0/0', '0.0.0.0/0'],
    ['255.255.255.255/32', '255.255.255.255/32'],
  ])('%s is the block %s', (text, block) => {
    const parsed = parseIpv4Cidr(text);
    expect(parsed && formatIpv4Block(parsed)).toBe(block);
  });

  it.each(['172.31.0.0', '256.0.0.0/8', '10.0.0.0/33', 'fd00::/64', 'docker', ''])(
    '%s is not one',
    (text) => {
      expect(parseIpv4Cidr(text)).toBeUndefined();
    },
  );
});

describe('firstFreeSubnet', () => {
  const pool = '172.31.0.0/16';

  it.each<[string, string[], string | undefined]>([
    ['an empty engine gives the first block', [], '172.31.0.0/24'],
    ['the blocks in use are skipped', ['172.31.0.0/24', '172.31.1.0/24'], '172.31.2.0/24'],
    ['a hole left by a removed network is reused', ['172.31.0.0/24', '172.31.2.0/24'], '172.31.1.0/24'],
    [
      'networks outside the pool change nothing',
      ['172.17.0.0/16', '192.168.0.0/20', 'fd00::/64'],
      '172.31.0.0/24',
    ],
    ['a small network inside a block takes the whole block', ['172.31.0.64/26'], '172.31.1.0/24'],
    ['a larger network in the pool is skipped as a whole', ['172.31.0.0/20'], '172.31.16.0/24'],
    ['a network covering the pool leaves nothing', ['172.16.0.0/12'], undefined],
  ])('%s', (_case, taken, expected) => {
    expect(firstFreeSubnet(pool, 24, taken)).toBe(expected);
  });

  it('a full pool gives nothing; the last free block is found', () => {
    const all = Array.from({ length: 256 }, (_, i) => `172.31.${i}.0/24`);
    expect(firstFreeSubnet(pool, 24, all)).toBeUndefined();
    expect(firstFreeSubnet(pool, 24, all.slice(0, 255))).toBe('172.31.255.0/24');
  });

  it.each([
    ['a block larger than the pool', '172.31.0.0/24', 16],
    ['a pool that is not a CIDR', 'docker', 24],
    ['blocks too small for a gateway and a worker', '172.31.0.0/16', 31],
  ])('%s gives nothing', (_case, badPool, prefixLength) => {
    expect(firstFreeSubnet(badPool, prefixLength, [])).toBeUndefined();
  });
});

describe('routedSubnets', () => {
  // The kernel's table as this project's test machine printed it (x86, little-endian), with a bridge Docker had
  // left behind (crl472943bca507) holding a /24 of the pool that Docker then gave a new network.
  const table = [
    'Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT',
    'eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0',
    'corralk8snode1\t0001F40A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0',
    'docker0\t000011AC\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0',
    'crl472943bca507\t00071FAC\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0',
    'eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0',
    'tun0\t0A000A0A\t00000000\t0005\t0\t0\t0\tFFFFFFFF\t0\t0\t0',
    '',
  ].join('\n');

  it('reads each route but the default one as a CIDR', () => {
    expect(routedSubnets(table, true)).toEqual([
      '10.244.1.0/24',
      '172.17.0.0/16',
      '172.31.7.0/24',
      '192.0.2.0/24',
      '10.10.0.10/32',
    ]);
  });

  it("reads a big-endian host's table the other way round", () => {
    const bigEndian =
      'Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\nbr0\tAC1F0700\t00000000\t0001\t0\t0\t0\tFFFFFF00';
    expect(routedSubnets(bigEndian, false)).toEqual(['172.31.7.0/24']);
  });

  it('skips what is not a route: a short line, a mask that is not a prefix, an empty table', () => {
    expect(routedSubnets('Iface\tDestination\nbr0\tzz\n', true)).toEqual([]);
    expect(routedSubnets('h\nbr0\t00071FAC\t0\t0\t0\t0\t0\t00FF00FF', true)).toEqual([]);
    expect(routedSubnets('', true)).toEqual([]);
  });

  it('a routed block of the pool is not given to a new network', () => {
    const taken = ['172.31.0.0/24', ...shadowingRoutes(routedSubnets(table, true), 24)];
    expect(firstFreeSubnet('172.31.0.0/16', 24, taken)).toBe('172.31.1.0/24');
    expect(firstFreeSubnet('172.31.7.0/24', 24, taken)).toBeUndefined();
  });
});

describe('shadowingRoutes', () => {
  it.each<[string, string[], number, string[]]>([
    [
      'a route as long as the block takes its traffic (the older wins)',
      ['172.31.7.0/24'],
      24,
      ['172.31.7.0/24'],
    ],
    [
      'a longer one takes part of it',
      ['172.31.7.16/28', '10.10.0.10/32'],
      24,
      ['172.31.7.16/28', '10.10.0.10/32'],
    ],
    [
      "a broader one (a VPN over the pool) loses to the network's own",
      ['172.16.0.0/12', '172.31.0.0/16'],
      24,
      [],
    ],
    ['against /28 blocks a /24 is broader', ['172.31.7.0/24'], 28, []],
  ])('%s', (_case, routes, prefixLength, expected) => {
    expect(shadowingRoutes(routes, prefixLength)).toEqual(expected);
  });
});
