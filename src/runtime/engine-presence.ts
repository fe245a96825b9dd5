/**
 * Whether a Docker engine is meant to exist on this machine (DOCKER_HOST, the default socket, an installed
 * `dockerd` or `docker`), so that `--runtime auto` waits for one that does not answer instead of running workers as
 * host processes. Pure over an injected view of the machine.
 */
import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';

export const DEFAULT_DOCKER_SOCKET = '/var/run/docker.sock';

/** What is looked at; the default reads the real environment and filesystem. */
export interface MachineView {
  env: NodeJS.ProcessEnv;
  exists(path: string): boolean;
}

/** Why an engine is expected here (the first sign found), or undefined where nothing points to one. */
export function expectedDockerEngine(machine: MachineView): string | undefined {
  const host = machine.env.DOCKER_HOST?.trim();
  if (host) return `DOCKER_HOST is set (${host})`;
  if (machine.exists(DEFAULT_DOCKER_SOCKET)) return `${DEFAULT_DOCKER_SOCKET} exists`;
  for (const dir of (machine.env.PATH ?? '').split(delimiter)) {
    if (dir === '') continue;
    for (const binary of ['dockerd', 'docker']) {
      const path = join(dir, binary);
      if (machine.exists(path)) return `${path} is installed`;
    }
  }
  return undefined;
}

export const realMachine: MachineView = { env: process.env, exists: existsSync };
