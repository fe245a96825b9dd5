/**
 * Creating one of Corral's bridge networks (a worker network, an installation's listener network) so that several
 * processes on one engine may do it at once: the subnet is the first block of the pool that no network of the
 * engine holds and no route of the host would take traffic from (subnet-pool.ts shadowingRoutes), taken again after a
 * clash with one made meanwhile by another process (the engine answers a pool overlap), and a network of the same
 * name made meanwhile is taken as it is. I/O only; the arithmetic is subnet-pool.ts.
 */
import { readFile } from 'node:fs/promises';
import { endianness } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import type Dockerode from 'dockerode';
import { RuntimeError } from '../types.js';
import { isNotFound, statusOf } from './engine-errors.js';
import type { WorkerNetwork } from './sandbox.js';
import { firstFreeSubnet, firstHost, routedSubnets, shadowingRoutes } from './subnet-pool.js';

/** Where new networks take their subnets (WorkerSandbox.subnets); undefined: Docker chooses. */
export type SubnetPool = { pool: string; prefixLength: number } | undefined;

/**
 * How many times a network is created again with another subnet after a clash with one made meanwhile, and the
 * waits between: the clashing network is in no listing until the engine has made its bridge (hundreds of
 * milliseconds under load), and a larger one (another installation's /24 over this one's /28 blocks) clashes with
 * every block taken inside it until then. About 6 s in all.
 */
const SUBNET_ATTEMPTS = 10;
const CLASH_WAITS_MS = [50, 100, 200, 400, 800, 1000];

export interface NetworkCreation {
  docker: Dockerode;
  network: WorkerNetwork;
  subnets: SubnetPool;
  /** Subnets this process is creating networks on now (two of its own may be made at once); shared, not copied. */
  claimed?: Set<string>;
  /** Whether the subnet's first host is named as the gateway (Docker's choice too, but then left out of its record). */
  withGateway?: boolean;
  /** What the network is for, in the error when the pool is full. */
  purpose: string;
  /** Waits between attempts after a clash; tests give their own. */
  sleep?: (ms: number) => Promise<unknown>;
  /** The host's routed subnets (hostRoutes: the kernel's table); tests give their own. */
  routes?: () => Promise<readonly string[]>;
}

/**
 * The subnets the host routes (the kernel's IPv4 table), none where it cannot be read (not Linux): the engine runs
 * on this host, as the workers' ports are published on its loopback address.
 */
export async function hostRoutes(): Promise<string[]> {
  const table = await readFile('/proc/net/route', 'utf8').catch(() => '');
  return routedSubnets(table, endianness() === 'LE');
}

/**
 * Creates the network; `made` when this call made it (on `subnet`), `existing` when another process made one of
 * that name first (its caller inspects it: this does not say whose it is).
 */
export async function createNetworkOnFreeSubnet(
  options: NetworkCreation,
): Promise<{ outcome: 'made'; subnet: string | undefined } | { outcome: 'existing' }> {
  const { docker, network, subnets } = options;
  const claimed = options.claimed ?? new Set<string>();
  const wait = options.sleep ?? sleep;
  const routes = options.routes ?? hostRoutes;
  // True when made here; false when one of that name was made meanwhile and is there now; undefined when the engine
  // said so but none is there (still being made, or removed since): created again.
  const create = async (subnet: string | undefined): Promise<boolean | undefined> => {
    try {
      await docker.createNetwork(
        subnet === undefined
          ? network
          : {
              ...network,
              IPAM: {
                Driver: 'default',
                Config: [{ Subnet: subnet, ...(options.withGateway ? { Gateway: firstHost(subnet) } : {}) }],
              },
            },
      );
      return true;
    } catch (error) {
      if (!madeMeanwhile(error)) throw error;
      return (await appears(docker, network.Name)) ? false : undefined;
    }
  };
  const clashed: string[] = [];
  for (let attempt = 1; ; attempt++) {
    const subnet =
      subnets &&
      (await freeSubnet(
        docker,
        subnets,
        [...claimed, ...clashed, ...shadowingRoutes(await routes(), subnets.prefixLength)],
        options.purpose,
      ));
    if (subnet !== undefined) claimed.add(subnet);
    try {
      const made = await create(subnet);
      if (made === true) return { outcome: 'made', subnet };
      if (made === false) return { outcome: 'existing' };
      if (attempt >= SUBNET_ATTEMPTS)
        throw new RuntimeError(
          'RUNTIME_ERROR',
          `the Docker network ${network.Name} was removed while it was made`,
        );
    } catch (error) {
      // A network made over that subnet since the listing (by another process on the engine): the next listing
      // shows it once it is made, and a block clear of it is taken then.
      if (subnet === undefined || subnets === undefined || !isPoolOverlap(error)) throw error;
      clashed.push(subnet);
      if (attempt >= SUBNET_ATTEMPTS) throw stillClashing(network.Name, subnets, clashed, error);
    } finally {
      if (subnet !== undefined) claimed.delete(subnet);
    }
    await wait(CLASH_WAITS_MS[Math.min(attempt, CLASH_WAITS_MS.length) - 1] ?? 0);
  }
}

function stillClashing(
  name: string,
  subnets: NonNullable<SubnetPool>,
  clashed: readonly string[],
  cause: unknown,
): RuntimeError {
  return new RuntimeError(
    'RUNTIME_ERROR',
    `the Docker network ${name} could not be made: each of ${clashed.length} subnets tried in ${subnets.pool} ` +
      `(${clashed.join(', ')}) overlapped a network the engine holds but does not list (${
        cause instanceof Error ? cause.message : String(cause)
      }); restarting the engine frees pools it kept for removed networks`,
    { cause },
  );
}

/**
 * Whether a network of that name can be inspected within about a second: the engine refuses a second network of
 * a name while the first is being made, before the first can be inspected.
 */
async function appears(docker: Dockerode, name: string): Promise<boolean> {
  for (let tries = 0; tries < 10; tries++) {
    const found = await docker
      .getNetwork(name)
      .inspect()
      .then(
        () => true,
        (error: unknown) => {
          if (isNotFound(error)) return false;
          throw error;
        },
      );
    if (found) return true;
    await sleep(100);
  }
  return false;
}

async function freeSubnet(
  docker: Dockerode,
  subnets: NonNullable<SubnetPool>,
  alsoTaken: readonly string[],
  purpose: string,
): Promise<string> {
  const networks = (await docker.listNetworks()) as { IPAM?: { Config?: { Subnet?: string }[] } }[];
  const taken = networks.flatMap((n) => (n.IPAM?.Config ?? []).flatMap((c) => (c.Subnet ? [c.Subnet] : [])));
  const subnet = firstFreeSubnet(subnets.pool, subnets.prefixLength, [...taken, ...alsoTaken]);
  if (subnet === undefined) {
    throw new RuntimeError(
      'RUNTIME_ERROR',
      `no /${subnets.prefixLength} subnet left for ${purpose} in ${subnets.pool}: every one overlaps a ` +
        "network the engine has or a route of the host's (ip route); remove unused networks (corral cleanup) or " +
        'set a larger workers.sandbox.network.subnetPool',
    );
  }
  return subnet;
}

/**
 * The engine's answers when a network of that name was made meanwhile: 409 by name, or 403 for its bridge, whose
 * name follows from the network's (sandbox.ts bridgeName), when the two were asked for on different subnets.
 */
function madeMeanwhile(error: unknown): boolean {
  if (statusOf(error) === 409) return true;
  return /networks have same bridge name/i.test(error instanceof Error ? error.message : String(error));
}

/** The engine's answer when a subnet overlaps a network it has (HTTP 403 in Docker 20 to 28). */
function isPoolOverlap(error: unknown): boolean {
  return /overlaps with other one|overlaps with another/i.test(
    error instanceof Error ? error.message : String(error),
  );
}
