/**
 * `--runtime`: builds the WorkerRuntime it names (docker, local, fake); `auto` takes docker when its engine
 * answers, else local.
 */
import { join } from 'node:path';
import Dockerode from 'dockerode';
import type { Logger } from 'pino';
import type { WorkerSandbox } from '../config/config.js';
import { ConfigError } from '../config/settings.js';
import { DockerRuntime, dockerReachable, engineAddress } from './docker/docker-runtime.js';
import { type DockerInfo, engineLimits } from './docker/engine-limits.js';
import { HostGuard, hostGuardUnable } from './docker/host-guard.js';
import { FakeRuntime } from './fake/fake-runtime.js';
import { LocalRuntime } from './local/local-runtime.js';
import type { WorkerRuntime } from './types.js';

export type RuntimeChoice = 'auto' | 'docker' | 'local' | 'fake';

/** The Docker engine `auto` and `docker` talk to; injected by tests, which need no engine. */
export interface DockerEngine {
  docker: Dockerode;
  /** Whether the engine answers (its `/_ping`). */
  reachable(): Promise<boolean>;
  /** `GET /info`: the storage driver and cgroup support say which limits the engine enforces. */
  info(): Promise<DockerInfo>;
}

export interface SelectRuntimeOptions {
  choice: RuntimeChoice;
  dataDir: string;
  logger: Logger;
  simulatedGpus: boolean;
  /** Default: the engine of DOCKER_HOST or the local socket, probed with `/_ping` within 1.5 s. */
  engine?: DockerEngine;
  /** How Docker workers are confined; with it, Corral also guards the host (firewall, nosuid storage mounts). */
  sandbox?: WorkerSandbox;
}

/** The engine dockerode finds from the environment (DOCKER_HOST, else /var/run/docker.sock). */
export function defaultDockerEngine(): DockerEngine {
  const docker = new Dockerode();
  return {
    docker,
    reachable: () => dockerReachable(docker),
    info: async () => (await docker.info()) as DockerInfo,
  };
}

/** Builds the runtime `--runtime` names; `auto` is docker when its socket answers, else local. */
export async function selectRuntime(options: SelectRuntimeOptions): Promise<WorkerRuntime> {
  const { choice, logger } = options;
  if (choice === 'fake') return new FakeRuntime({ clock: Date.now });
  if (choice === 'local') return local(options.dataDir, logger);
  const engine = options.engine ?? defaultDockerEngine();
  const { docker } = engine;
  const reachable = await engine.reachable();
  if (choice === 'docker' && !reachable) {
    throw new ConfigError(
      `invalid --runtime (CORRAL_RUNTIME): docker does not answer at ${engineAddress(docker)}`,
    );
  }
  if (!reachable) {
    logger.warn(
      { engine: engineAddress(docker) },
      'no Docker engine answers; using the local runtime (development only)',
    );
    return local(options.dataDir, logger);
  }
  const limits = engineLimits(await engine.info().catch((): DockerInfo => ({})));
  logger.info(
    {
      storage: limits.storage,
      rootfsSizeLimit: limits.rootfsSize,
      rootfsReason: limits.rootfsReason,
      memoryLimit: limits.memory,
    },
    'worker limits the Docker engine enforces',
  );
  const runtime = new DockerRuntime({
    docker,
    logger,
    requestGpuDevices: !options.simulatedGpus,
    enforceRootfsSize: limits.rootfsSize,
    ...(options.sandbox ? await sandboxed(options.sandbox, engineAddress(docker), logger) : {}),
  });
  if (options.sandbox) await runtime.pruneNetworks();
  return runtime;
}

/** The sandbox and its host guard, whose firewall goes up now so that the start-up log says where it stands. */
async function sandboxed(sandbox: WorkerSandbox, address: string, logger: Logger) {
  const hostGuard = new HostGuard({
    logger,
    blockHost: sandbox.blockHost && sandbox.networkIsolation !== 'none',
    storageNosuid: sandbox.storageNosuid,
    unable: hostGuardUnable({ engineAddress: address, uid: process.getuid?.() }),
  });
  logger.info(
    {
      capAdd: sandbox.capAdd,
      pidsLimit: sandbox.pidsLimit,
      log: sandbox.log,
      networkIsolation: sandbox.networkIsolation,
    },
    'worker sandbox',
  );
  await hostGuard.firewall();
  return { sandbox, hostGuard };
}

function local(dataDir: string, logger: Logger): WorkerRuntime {
  return new LocalRuntime({ stateDir: join(dataDir, 'local-runtime'), logger });
}
