/**
 * The bridge networks workers join (sandbox.ts says which): created on demand before a worker's container, removed
 * once no worker's container uses them. I/O only. Creating a container and removing its network are serialised
 * per network, so that a network is never removed between its check and the container that needed it.
 */
import type Dockerode from 'dockerode';
import type { Logger } from 'pino';
import { LABELS, RuntimeError } from '../types.js';
import { isNotFound, statusOf } from './engine-errors.js';
import { ISOLATION_LABEL, NETWORK_LABEL, type WorkerNetwork } from './sandbox.js';
import { firstFreeSubnet } from './subnet-pool.js';

/** Where new worker networks take their subnets (WorkerSandbox.subnets); undefined: Docker chooses. */
export type SubnetPool = { pool: string; prefixLength: number } | undefined;

/** How many times a network is created again with another subnet after a clash with one made meanwhile. */
const SUBNET_ATTEMPTS = 5;

export class WorkerNetworks {
  readonly #docker: Dockerode;
  readonly #logger: Logger;
  /** Per network name: the tail of its queue of operations. */
  readonly #queues = new Map<string, Promise<unknown>>();
  readonly #subnets: SubnetPool;
  /** Subnets this process is creating networks on now: two owners' first workers may start together. */
  readonly #claimed = new Set<string>();

  constructor(options: { docker: Dockerode; logger: Logger; subnets?: SubnetPool }) {
    this.#docker = options.docker;
    this.#logger = options.logger;
    this.#subnets = options.subnets;
  }

  /** Runs `create` (which makes the worker's container) with the network present and no removal of it under way. */
  async withNetwork<T>(network: WorkerNetwork, create: () => Promise<T>): Promise<T> {
    return this.#serialise(network.Name, async () => {
      await this.#ensure(network);
      return create();
    });
  }

  /** Removes the network when no container of a worker uses it any more (a foreign one keeps it, with a warning). */
  releaseIfUnused(name: string): Promise<void> {
    return this.#serialise(name, async () => {
      const users = await this.#docker.listContainers({
        all: true,
        filters: { label: [`${LABELS.managed}=true`, `${NETWORK_LABEL}=${name}`] },
      });
      if (users.length > 0) return;
      try {
        await this.#docker.getNetwork(name).remove();
        this.#logger.info({ network: name }, 'worker network removed');
      } catch (error) {
        if (isNotFound(error)) return;
        this.#logger.warn({ network: name, err: error }, 'worker network could not be removed');
      }
    });
  }

  /**
   * Removes the worker networks no worker uses (left behind when Corral stopped between the two removals): only the
   * installation's own when it is given, since another installation's may be about to get its first container.
   */
  async pruneUnused(installationId?: string): Promise<void> {
    const own = installationId === undefined ? [] : [`${LABELS.installation}=${installationId}`];
    const networks = await this.#docker.listNetworks({
      filters: { label: [`${LABELS.managed}=true`, ISOLATION_LABEL, ...own] },
    });
    for (const { Name } of networks) await this.releaseIfUnused(Name);
  }

  async #ensure(network: WorkerNetwork): Promise<void> {
    if (await this.#exists(network.Name)) return;
    if (!this.#subnets) return this.#create(network, undefined);
    const clashed: string[] = [];
    for (let attempt = 1; ; attempt++) {
      const subnet = await this.#freeSubnet(this.#subnets, clashed);
      this.#claimed.add(subnet);
      try {
        return await this.#create(network, subnet);
      } catch (error) {
        // A network made on that subnet since the listing (by another process on the engine): take the next one.
        if (!isPoolOverlap(error) || attempt >= SUBNET_ATTEMPTS) throw error;
        clashed.push(subnet);
      } finally {
        this.#claimed.delete(subnet);
      }
    }
  }

  async #create(network: WorkerNetwork, subnet: string | undefined): Promise<void> {
    try {
      await this.#docker.createNetwork(
        subnet === undefined
          ? network
          : { ...network, IPAM: { Driver: 'default', Config: [{ Subnet: subnet }] } },
      );
      this.#logger.info(
        { network: network.Name, bridge: network.Options?.['com.docker.network.bridge.name'], subnet },
        'worker network created',
      );
    } catch (error) {
      // Another Corral process sharing the engine made it first.
      if (statusOf(error) === 409 && (await this.#exists(network.Name))) return;
      throw error;
    }
  }

  async #freeSubnet(subnets: NonNullable<SubnetPool>, clashed: readonly string[]): Promise<string> {
    const networks = (await this.#docker.listNetworks()) as { IPAM?: { Config?: { Subnet?: string }[] } }[];
    const taken = networks.flatMap((n) =>
      (n.IPAM?.Config ?? []).flatMap((c) => (c.Subnet ? [c.Subnet] : [])),
    );
    const subnet = firstFreeSubnet(subnets.pool, subnets.prefixLength, [
      ...taken,
      ...this.#claimed,
      ...clashed,
    ]);
    if (subnet === undefined) {
      throw new RuntimeError(
        'RUNTIME_ERROR',
        `no /${subnets.prefixLength} subnet left for a worker network in ${subnets.pool}: every one overlaps a ` +
          'network the engine has; remove unused networks or set a larger workers.sandbox.network.subnetPool',
      );
    }
    return subnet;
  }

  async #exists(name: string): Promise<boolean> {
    try {
      const found = (await this.#docker.getNetwork(name).inspect()) as { Labels?: Record<string, string> };
      if (found.Labels?.[LABELS.managed] !== 'true') {
        throw new RuntimeError(
          'RUNTIME_ERROR',
          `a Docker network named ${name} exists and was not made by Corral; remove or rename it`,
        );
      }
      return true;
    } catch (error) {
      if (isNotFound(error)) return false;
      throw error;
    }
  }

  #serialise<T>(name: string, operation: () => Promise<T>): Promise<T> {
    const previous = this.#queues.get(name) ?? Promise.resolve();
    const result = previous.then(operation, operation);
    const tail = result.catch(() => undefined);
    this.#queues.set(name, tail);
    void tail.then(() => {
      if (this.#queues.get(name) === tail) this.#queues.delete(name);
    });
    return result;
  }
}

/** The engine's answer when a subnet overlaps a network it has (HTTP 403 in Docker 20 to 28). */
function isPoolOverlap(error: unknown): boolean {
  return /overlaps with other one|overlaps with another/i.test(
    error instanceof Error ? error.message : String(error),
  );
}
