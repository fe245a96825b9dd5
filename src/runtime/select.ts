/**
 * `--runtime`: builds the WorkerRuntime it names (docker, kubernetes, local, fake). `auto` takes docker when its engine answers,
 * waits for it when one should be there (engine-presence.ts) but is silent, and takes local only on a machine with
 * no engine at all. Local workers are host processes: the runtime warns, and refuses root without `allowRoot`.
 */

import { userInfo } from 'node:os';
import { join } from 'node:path';
import Dockerode from 'dockerode';
import type { Logger } from 'pino';
import type { WorkerSandbox } from '../config/config.js';
import { ConfigError } from '../config/settings.js';
import { systemTimers, type Timers } from '../ports/clock.js';
import type { GpuCheckpointer } from '../ports/gpu-checkpoint.js';
import { DockerRuntime, dockerReachable, engineAddress } from './docker/docker-runtime.js';
import { type DockerInfo, engineLimits } from './docker/engine-limits.js';
import { refuseEngineRedirects } from './docker/engine-redirects.js';
import type { WorkerListenerHole } from './docker/firewall-rules.js';
import { HostGuard, hostGuardUnable } from './docker/host-guard.js';
import { ensureListenerNetwork } from './docker/listener-network.js';
import { expectedDockerEngine, type MachineView, realMachine } from './engine-presence.js';
import { FakeRuntime } from './fake/fake-runtime.js';
import { connectKubernetes, type KubernetesSettings } from './kubernetes/connect.js';
import { LocalRuntime } from './local/local-runtime.js';
import { SuspendRecords } from './suspend-records.js';
import type { WorkerRuntime } from './types.js';
import { type Readiness, WaitingRuntime } from './waiting-runtime.js';

export type RuntimeChoice = 'auto' | 'docker' | 'kubernetes' | 'local' | 'fake';

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
  /** Only this installation's unused worker networks are pruned at start (others may be about to be used). */
  installationId?: string;
  /** `--local-allow-root`: the local runtime may run workers as root (they are host processes). */
  allowRoot?: boolean;
  /** Corral's user id; default process.getuid(). */
  uid?: number;
  /** Where signs of an engine are looked for; default the real environment and filesystem. */
  machine?: MachineView;
  /** The wait for a silent engine probes on these; default the system's. */
  timers?: Timers;
  /** `--runtime kubernetes`: the cluster, the namespace and how pods are made. */
  kubernetes?: KubernetesSettings;
  /** What suspends idle workers' GPU state (docker and local); none: the suspended tier is off. */
  checkpointer?: GpuCheckpointer | undefined;
  /**
   * Jobs: the worker-facing listener's port. On Docker (with the sandbox and an installation id) the runtime makes
   * the listener's address (docker/listener-network.ts), opens the host guard's one hole to that address and port,
   * and says the address through `onAddress` before it runs any worker (later for an awaited engine).
   */
  workerListener?: { port: number; onAddress(address: string): void };
}

/** The engine dockerode finds from the environment (DOCKER_HOST, else /var/run/docker.sock). */
export function defaultDockerEngine(): DockerEngine {
  refuseEngineRedirects();
  const docker = new Dockerode();
  return {
    docker,
    reachable: () => dockerReachable(docker),
    info: async () => (await docker.info()) as DockerInfo,
  };
}

/** Builds the runtime `--runtime` names; see the file's header for `auto`. */
export async function selectRuntime(options: SelectRuntimeOptions): Promise<WorkerRuntime> {
  const { choice, logger } = options;
  if (choice === 'fake') return new FakeRuntime({ clock: Date.now });
  if (choice === 'local') return local(options);
  if (choice === 'kubernetes') {
    if (!options.kubernetes)
      throw new ConfigError('invalid --runtime (CORRAL_RUNTIME): kubernetes needs its settings');
    return connectKubernetes(options.kubernetes, {
      logger,
      ...(options.installationId === undefined ? {} : { installationId: options.installationId }),
    });
  }
  const engine = options.engine ?? defaultDockerEngine();
  const { docker } = engine;
  const reachable = await engine.reachable();
  if (choice === 'docker' && !reachable) {
    throw new ConfigError(
      `invalid --runtime (CORRAL_RUNTIME): docker does not answer at ${engineAddress(docker)}`,
    );
  }
  if (reachable) return dockerRuntime(engine, options);
  const expected = expectedDockerEngine(options.machine ?? realMachine);
  if (expected === undefined) {
    logger.info('no Docker engine on this machine (no DOCKER_HOST, socket or docker binary)');
    return local(options);
  }
  const address = engineAddress(docker);
  logger.warn(
    { engine: address, because: expected },
    'waiting for the Docker engine to answer before running workers; to run workers as host processes instead, ' +
      'choose --runtime local explicitly',
  );
  return new WaitingRuntime({
    waitingFor: `the Docker engine at ${address}`,
    probe: () => engine.reachable(),
    build: () => dockerRuntime(engine, options),
    timers: options.timers ?? systemTimers,
    onReady: () => logger.info({ engine: address }, 'the Docker engine answers; workers can run'),
  });
}

/** What `/healthz` reports: ready unless a Docker engine is still awaited. */
export function runtimeReadiness(runtime: WorkerRuntime): Readiness {
  return runtime instanceof WaitingRuntime ? runtime.readiness() : { ready: true };
}

/** Resolves true once the runtime can run workers (at once, but for an awaited engine), false if closed first. */
export function runtimeReady(runtime: WorkerRuntime): Promise<boolean> {
  return runtime instanceof WaitingRuntime ? runtime.whenReady() : Promise.resolve(true);
}

async function dockerRuntime(engine: DockerEngine, options: SelectRuntimeOptions): Promise<WorkerRuntime> {
  const { docker } = engine;
  const { logger } = options;
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
  const hole = await listenerHole(docker, options);
  const runtime = new DockerRuntime({
    docker,
    logger,
    requestGpuDevices: !options.simulatedGpus,
    enforceRootfsSize: limits.rootfsSize,
    checkpointer: options.checkpointer,
    suspendRecords: new SuspendRecords(join(options.dataDir, 'docker-runtime', 'suspended')),
    ...(options.sandbox ? await sandboxed(options.sandbox, engineAddress(docker), logger, hole) : {}),
  });
  if (hole) options.workerListener?.onAddress(hole.address);
  if (options.sandbox) await runtime.pruneNetworks(options.installationId);
  return runtime;
}

/** The worker-facing listener's address and port on Docker, its network made first; undefined without jobs. */
async function listenerHole(
  docker: Dockerode,
  options: SelectRuntimeOptions,
): Promise<WorkerListenerHole | undefined> {
  const { workerListener, installationId, sandbox, logger } = options;
  if (!workerListener || installationId === undefined || !sandbox) return undefined;
  const address = await ensureListenerNetwork({ docker, installationId, subnets: sandbox.subnets, logger });
  return { address, port: workerListener.port, installationId };
}

/** The sandbox and its host guard, whose firewall goes up now so that the start-up log says where it stands. */
async function sandboxed(sandbox: WorkerSandbox, address: string, logger: Logger, hole?: WorkerListenerHole) {
  const hostGuard = new HostGuard({
    logger,
    ...(hole ? { workerListener: hole } : {}),
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
      subnets: sandbox.subnets ?? "Docker's default address pools",
    },
    'worker sandbox',
  );
  await hostGuard.firewall();
  return { sandbox, hostGuard };
}

/** Why the local runtime starts no worker as root without `allowRoot` (logged once, and each start fails with it). */
const ROOT_REFUSAL =
  'refusing the local runtime as root: its workers are host processes and would run as root on this host; ' +
  'run corral as another user, use Docker, or pass --local-allow-root (CORRAL_LOCAL_ALLOW_ROOT=1) to accept it';

/**
 * The local runtime, loud about what it is. As root without `allowRoot` it starts no worker: the server runs, says
 * why once, and each worker fails with that reason.
 */
function local(options: SelectRuntimeOptions): WorkerRuntime {
  const uid = options.uid ?? process.getuid?.() ?? -1;
  const stateDir = join(options.dataDir, 'local-runtime');
  if (uid === 0 && !options.allowRoot) {
    options.logger.error({ runtime: 'local', uid }, ROOT_REFUSAL);
    return new LocalRuntime({
      stateDir,
      logger: options.logger,
      refusal: ROOT_REFUSAL,
      checkpointer: options.checkpointer,
    });
  }
  options.logger.warn(
    { runtime: 'local', user: userName(), uid, asRoot: uid === 0 },
    'LOCAL RUNTIME: workers run as host processes with the rights of this user, with no isolation from the host ' +
      'or from each other; single-tenant: only admin keys may create endpoints',
  );
  return new LocalRuntime({ stateDir, logger: options.logger, checkpointer: options.checkpointer });
}

function userName(): string {
  try {
    return userInfo().username;
  } catch {
    return 'unknown';
  }
}
