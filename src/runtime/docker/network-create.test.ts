// Making a network on the first free block of the pool while another process makes one over it: the engine refuses
// an overlap with a network it has allocated but does not list yet, and the creation waits until it does. An engine
// stand-in with the real engine's two answers (the listing, and the overlap refusal), since the window in which the
// real engine lists nothing cannot be held open on demand; network-create.int.test.ts races the real one.
import type Dockerode from 'dockerode';
import { describe, expect, it } from 'vitest';
import { createNetworkOnFreeSubnet } from './network-create.js';
import { corralBridge } from './sandbox.js';
import { overlaps, parseIpv4Cidr } from './subnet-pool.js';

const OVERLAP = '(HTTP code 403) unexpected - Pool overlaps with other one on this address space';

function overlap(a: string, b: string): boolean {
  const [x, y] = [parseIpv4Cidr(a), parseIpv4Cidr(b)];
  return x !== undefined && y !== undefined && overlaps(x, y);
}

/** An engine holding `unlisted` (being made by another process) until `listedAfterMs` of waiting have passed. */
function engine(options: { unlisted: string; listedAfterMs: number }) {
  const listed: { Name: string; IPAM: { Config: { Subnet: string }[] } }[] = [];
  const tried: string[] = [];
  let waited = 0;
  const unlistedIsListed = () => waited >= options.listedAfterMs;
  const docker = {
    listNetworks: async () => [
      ...listed,
      ...(unlistedIsListed() ? [{ Name: 'other', IPAM: { Config: [{ Subnet: options.unlisted }] } }] : []),
    ],
    createNetwork: async (spec: { Name: string; IPAM?: { Config: { Subnet: string }[] } }) => {
      const subnet = spec.IPAM?.Config[0]?.Subnet ?? '';
      tried.push(subnet);
      const held = [options.unlisted, ...listed.flatMap((n) => n.IPAM.Config.map((c) => c.Subnet))];
      if (held.some((other) => overlap(other, subnet))) throw new Error(OVERLAP);
      listed.push({ Name: spec.Name, IPAM: { Config: [{ Subnet: subnet }] } });
      return {};
    },
  } as unknown as Dockerode;
  const sleep = async (ms: number) => {
    waited += ms;
  };
  return { docker, sleep, tried, waited: () => waited };
}

const network = corralBridge('corral-owner-test', {});
const subnets = { pool: '172.31.0.0/16', prefixLength: 28 };

/** A worker network made on the stand-in engine, the host routing `routes` (none by default). */
function create(fake: ReturnType<typeof engine>, routes: string[] = []) {
  return createNetworkOnFreeSubnet({
    docker: fake.docker,
    network,
    subnets,
    purpose: 'a worker network',
    sleep: fake.sleep,
    routes: async () => routes,
  });
}

describe('createNetworkOnFreeSubnet', () => {
  it('skips a block the host routes elsewhere, which the engine would give without a word', async () => {
    // The engine holds nothing; a bridge it left behind still routes 172.31.0.0/28 (and a VPN the next block).
    const fake = engine({ unlisted: '10.0.0.0/8', listedAfterMs: 0 });
    const made = await create(fake, ['172.31.0.0/28', '172.31.0.16/30']);
    expect(made).toEqual({ outcome: 'made', subnet: '172.31.0.32/28' });
    expect(fake.tried).toEqual(['172.31.0.32/28']);
  });

  it("waits out another process's larger network over the first blocks, then takes the block after it", async () => {
    // Another installation's /24 is being made over the first sixteen /28 blocks, and is listed after 700 ms.
    const fake = engine({ unlisted: '172.31.0.0/24', listedAfterMs: 700 });
    const made = await create(fake);
    expect(made).toEqual({ outcome: 'made', subnet: '172.31.1.0/28' });
    // Four clashes inside the /24, with waits of 50, 100, 200 and 400 ms; then the listing shows it.
    expect(fake.tried).toEqual([
      '172.31.0.0/28',
      '172.31.0.16/28',
      '172.31.0.32/28',
      '172.31.0.48/28',
      '172.31.1.0/28',
    ]);
    expect(fake.waited()).toBe(750);
  });

  it('a pool the engine keeps and never lists fails after ten tries, naming them and what frees it', async () => {
    const fake = engine({ unlisted: '172.31.0.0/16', listedAfterMs: Number.POSITIVE_INFINITY });
    const creation = create(fake);
    await expect(creation).rejects.toThrow(
      /corral-owner-test could not be made: each of 10 subnets tried in 172\.31\.0\.0\/16 \(172\.31\.0\.0\/28, .*\) overlapped .*Pool overlaps.*restarting the engine/,
    );
    expect(fake.tried).toHaveLength(10);
    // About six seconds in all: long enough for a bridge made under load, short of a stuck start.
    expect(fake.waited()).toBe(50 + 100 + 200 + 400 + 800 + 1000 * 4);
  });
});
