/**
 * Two installations on one engine making networks on one pool at once, one in /24 blocks and one in /28 blocks
 * (the CI failure of stop 44: a /28 listener network clashed with another suite's /24 while the engine made it, and
 * gave up after eight tries within that window). Each creation here is a separate process's: no claims shared.
 */
import { randomUUID } from 'node:crypto';
import Docker from 'dockerode';
import { afterAll, describe, expect, it } from 'vitest';
import { integrationAvailable } from '../../../test/support/integration.js';
import { dockerAvailable } from '../../../test/support/test-image.js';
import { LABELS } from '../types.js';
import { createNetworkOnFreeSubnet } from './network-create.js';
import { corralBridge } from './sandbox.js';
import { overlaps, parseIpv4Cidr } from './subnet-pool.js';

const withDocker = integrationAvailable(
  'Docker',
  dockerAvailable(),
  'start dockerd (or run scripts/provision.sh) so that `docker info` answers',
);

// A pool of its own, clear of Corral's default (172.31.0.0/16) and of Docker's default pools.
const POOL = '10.213.0.0/20';

describe.runIf(withDocker)('networks made on one pool by two installations at once (Docker engine)', () => {
  const run = randomUUID().slice(0, 8);
  const docker = new Docker();
  const names: string[] = [];

  afterAll(async () => {
    for (const name of names)
      await docker
        .getNetwork(name)
        .remove()
        .catch(() => undefined);
  });

  it('every one is made, on blocks that overlap no other', async () => {
    const creations = [24, 28, 24, 28, 24, 28, 24, 28].map((prefixLength, index) => {
      const name = `corral-test-nc-${run}-${index}`;
      names.push(name);
      return createNetworkOnFreeSubnet({
        docker,
        network: corralBridge(name, { [LABELS.managed]: 'true' }),
        subnets: { pool: POOL, prefixLength },
        withGateway: true,
        purpose: 'a test network',
      });
    });
    // Settled, so that none is still being made when they are removed.
    const settled = await Promise.allSettled(creations);
    const refused = settled.flatMap((s) => (s.status === 'rejected' ? [String(s.reason)] : []));
    expect(refused).toEqual([]);
    const subnets = settled.map((s) =>
      s.status === 'fulfilled' && s.value.outcome === 'made' ? s.value.subnet : undefined,
    );
    expect(subnets.every((s) => s !== undefined)).toBe(true);
    const blocks = subnets.map((s) => parseIpv4Cidr(s ?? ''));
    for (const [i, a] of blocks.entries())
      for (const b of blocks.slice(i + 1)) {
        if (!a || !b) throw new Error('a subnet that does not parse');
        expect(overlaps(a, b)).toBe(false);
      }
  }, 60_000);
});
