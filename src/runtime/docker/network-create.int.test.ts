/**
 * Two installations on one engine making networks on one pool at once, one in /24 blocks and one in /28 blocks
 * (the CI failure of stop 44: a /28 listener network clashed with another suite's /24 while the engine made it, and
 * gave up after eight tries within that window). Each creation here is a separate process's: no claims shared.
 * And a block the host routes elsewhere (a bridge the engine does not know, as one it left behind) is passed over,
 * so that the new network's traffic goes to its own bridge.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import Docker from 'dockerode';
import { afterAll, describe, expect, it } from 'vitest';
import { integrationAvailable } from '../../../test/support/integration.js';
import { dockerAvailable } from '../../../test/support/test-image.js';
import { LABELS } from '../types.js';
import { createNetworkOnFreeSubnet } from './network-create.js';
import { bridgeName, corralBridge } from './sandbox.js';
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

/** Root and iproute2: a bridge of the test's own can be made, given an address, and removed. */
const withRoutes = integrationAvailable(
  'root and iproute2 (ip)',
  dockerAvailable() && process.getuid?.() === 0 && spawnSync('ip', ['-V'], { stdio: 'ignore' }).status === 0,
  'run as root with Docker and iproute2 (scripts/provision.sh installs them)',
);

describe.runIf(withRoutes)("a block the host routes elsewhere (Docker engine, the host's routes)", () => {
  const run = randomBytes(4).toString('hex');
  const docker = new Docker();
  // A bridge outside Docker, holding the first /24 of a pool of the test's own: what a bridge left behind by a
  // removed network looks like to the kernel (an address and a route, no port up).
  const stray = `crlt${run}`;
  const name = `corral-test-nr-${run}`;
  const pool = '10.214.0.0/22';
  const ip = (...args: string[]) => execFileSync('ip', args, { encoding: 'utf8' });

  afterAll(async () => {
    await docker
      .getNetwork(name)
      .remove()
      .catch(() => undefined);
    spawnSync('ip', ['link', 'del', stray], { stdio: 'ignore' });
  });

  it('is not given to a new network, whose traffic then goes to its own bridge', async () => {
    ip('link', 'add', stray, 'type', 'bridge');
    ip('addr', 'add', '10.214.0.1/24', 'dev', stray);
    ip('link', 'set', stray, 'up');
    expect(ip('route', 'get', '10.214.0.2')).toContain(`dev ${stray}`);

    const made = await createNetworkOnFreeSubnet({
      docker,
      network: corralBridge(name, { [LABELS.managed]: 'true' }),
      subnets: { pool, prefixLength: 24 },
      withGateway: true,
      purpose: 'a test network',
    });
    expect(made).toEqual({ outcome: 'made', subnet: '10.214.1.0/24' });
    expect(ip('route', 'get', '10.214.1.2')).toContain(`dev ${bridgeName(name)}`);
  }, 60_000);
});
