import { join } from 'node:path';
import Dockerode from 'dockerode';
import type { Logger } from 'pino';
import { ConfigError } from '../config/settings.js';
import { DockerRuntime, dockerReachable, engineAddress } from './docker/docker-runtime.js';
import { FakeRuntime } from './fake/fake-runtime.js';
import { LocalRuntime } from './local/local-runtime.js';
import type { WorkerRuntime } from './types.js';

export type RuntimeChoice = 'auto' | 'docker' | 'kubernetes' | 'local' | 'fake';

/** Builds the runtime `--runtime` names; `auto` is docker when its socket answers, else local. */
export async function selectRuntime(options: {
  choice: RuntimeChoice;
  dataDir: string;
  logger: Logger;
  simulatedGpus: boolean;
}): Promise<WorkerRuntime> {
  const { choice, logger } = options;
  if (choice === 'kubernetes') {
    throw new ConfigError(
      'invalid --runtime (CORRAL_RUNTIME): the kubernetes runtime is not available yet; use docker or local',
    );
  }
  if (choice === 'fake') return new FakeRuntime({ clock: Date.now });
  if (choice === 'local') return local(options.dataDir);
  const docker = new Dockerode();
  const reachable = await dockerReachable(docker);
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
    return local(options.dataDir);
  }
  return new DockerRuntime({ docker, logger, requestGpuDevices: !options.simulatedGpus });
}

function local(dataDir: string): WorkerRuntime {
  return new LocalRuntime({ stateDir: join(dataDir, 'local-runtime') });
}
