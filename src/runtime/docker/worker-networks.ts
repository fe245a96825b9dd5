/**
 * The bridge networks workers join (sandbox.ts says which): created on demand before a worker's container, removed
 * once no worker's container uses them. I/O only. Creating a container and removing its network are serialised
 * per network, so that a network is never removed between its check and the container that needed it.
 */
import type Dockerode from 'dockerode';
import type { Logger } from 'pino';
import { LABELS, RuntimeError } from '../types.js';
import { isNotFound } from './engine-errors.js';
import { createNetworkOnFreeSubnet, type SubnetPool } from './network-create.js';
import { ISOLATION_LABEL, NETWORK_LABEL, type WorkerNetwork } from './sandbox.js';

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
    const created = await createNetworkOnFreeSubnet({
      docker: this.#docker,
      network,
      subnets: this.#subnets,
      claimed: this.#claimed,
      purpose: 'a worker network',
    });
    // Another Corral process sharing the engine made it first: it is used as it is, once it is seen to be Corral's.
    if (created.outcome === 'existing') {
      if (await this.#exists(network.Name)) return;
      throw new RuntimeError(
        'RUNTIME_ERROR',
        `the Docker network ${network.Name} was removed while it was made`,
      );
    }
    this.#logger.info(
      {
        network: network.Name,
        bridge: network.Options?.['com.docker.network.bridge.name'],
        subnet: created.subnet,
      },
      'worker network created',
    );
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
