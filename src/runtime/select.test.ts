import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import Dockerode from 'dockerode';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ConfigError } from '../config/settings.js';
import { DockerRuntime } from './docker/docker-runtime.js';
import type { DockerInfo } from './docker/engine-limits.js';
import { type RuntimeChoice, selectRuntime } from './select.js';

/** Log lines as pino writes them, to check what start-up says. */
function capturingLogger() {
  const lines: { level: number; msg: string }[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) });
  return { logger, lines };
}

describe('selectRuntime', () => {
  let dataDir: string;
  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'corral-select-'));
  });
  afterAll(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  // No engine is contacted: `reachable` is the probe's answer; Dockerode makes no request when constructed.
  const engine = (answers: boolean, info: DockerInfo = { Driver: 'overlay2' }) => ({
    docker: new Dockerode({ socketPath: '/run/corral-test/docker.sock' }),
    reachable: vi.fn(async () => answers),
    info: vi.fn(async () => info),
  });

  it.each<{ choice: RuntimeChoice; answers: boolean; runtime: string; probed: boolean; warns?: RegExp }>([
    { choice: 'auto', answers: true, runtime: 'docker', probed: true },
    {
      choice: 'auto',
      answers: false,
      runtime: 'local',
      probed: true,
      warns: /no Docker engine answers; using the local runtime/,
    },
    { choice: 'docker', answers: true, runtime: 'docker', probed: true },
    { choice: 'local', answers: true, runtime: 'local', probed: false },
    { choice: 'local', answers: false, runtime: 'local', probed: false },
    { choice: 'fake', answers: true, runtime: 'fake', probed: false },
  ])(
    '--runtime $choice, docker answering: $answers -> $runtime',
    async ({ choice, answers, runtime, probed, warns }) => {
      const { logger, lines } = capturingLogger();
      const docker = engine(answers);
      const selected = await selectRuntime({ choice, dataDir, logger, simulatedGpus: true, engine: docker });
      expect(selected.name).toBe(runtime);
      expect(docker.reachable).toHaveBeenCalledTimes(probed ? 1 : 0);
      const warnings = lines.filter((line) => line.level === 40).map((line) => line.msg);
      expect(warnings).toEqual(warns ? [expect.stringMatching(warns)] : []);
      await selected.close();
    },
  );

  it.each<{ choice: RuntimeChoice; answers: boolean; message: RegExp; probed: boolean }>([
    {
      choice: 'docker',
      answers: false,
      message:
        /^invalid --runtime \(CORRAL_RUNTIME\): docker does not answer at \/run\/corral-test\/docker\.sock$/,
      probed: true,
    },
  ])(
    '--runtime $choice, docker answering: $answers -> a ConfigError',
    async ({ choice, answers, message, probed }) => {
      const docker = engine(answers);
      const error = await selectRuntime({
        choice,
        dataDir,
        logger: capturingLogger().logger,
        simulatedGpus: false,
        engine: docker,
      }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).message).toMatch(message);
      expect(docker.reachable).toHaveBeenCalledTimes(probed ? 1 : 0);
    },
  );

  it.each<{ name: string; info: () => Promise<DockerInfo>; enforced: boolean; storage: string }>([
    {
      name: 'overlay2 on xfs',
      info: async () => ({ Driver: 'overlay2', DriverStatus: [['Backing Filesystem', 'xfs']] }),
      enforced: true,
      storage: 'overlay2 on xfs',
    },
    {
      name: 'overlay2 on extfs',
      info: async () => ({ Driver: 'overlay2', DriverStatus: [['Backing Filesystem', 'extfs']] }),
      enforced: false,
      storage: 'overlay2 on extfs',
    },
    { name: 'zfs', info: async () => ({ Driver: 'zfs' }), enforced: true, storage: 'zfs' },
    {
      name: 'no answer to docker info',
      info: () => Promise.reject(new Error('boom')),
      enforced: false,
      storage: 'unknown',
    },
  ])(
    'docker on $name: the rootfs size limit is enforced: $enforced, said once at start',
    async ({ info, enforced, storage }) => {
      const { logger, lines } = capturingLogger();
      const docker = { ...engine(true), info: vi.fn(info) };
      const selected = await selectRuntime({
        choice: 'docker',
        dataDir,
        logger,
        simulatedGpus: true,
        engine: docker,
      });
      expect(selected).toBeInstanceOf(DockerRuntime);
      expect((selected as DockerRuntime).enforcesRootfsSize).toBe(enforced);
      const said = lines.filter((line) => line.msg === 'worker limits the Docker engine enforces');
      expect(said).toEqual([
        expect.objectContaining({ storage, rootfsSizeLimit: enforced, memoryLimit: true }),
      ]);
      await selected.close();
    },
  );
});
