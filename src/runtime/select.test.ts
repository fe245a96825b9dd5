import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import Dockerode from 'dockerode';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ManualTimers } from '../../test/support/manual-timers.js';
import { ConfigError } from '../config/settings.js';
import { DockerRuntime } from './docker/docker-runtime.js';
import type { DockerInfo } from './docker/engine-limits.js';
import { type RuntimeChoice, runtimeReadiness, runtimeReady, selectRuntime } from './select.js';

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

  const engineHere = { env: { DOCKER_HOST: 'unix:///run/corral-test/docker.sock' }, exists: () => false };
  const noEngine = { env: { PATH: '/usr/bin' }, exists: () => false };
  const LOCAL_WARNING = /^LOCAL RUNTIME: workers run as host processes/;
  const WAITING = /^waiting for the Docker engine to answer .*choose --runtime local explicitly$/;

  it.each<{
    choice: RuntimeChoice;
    answers: boolean;
    engineExpected: boolean;
    runtime: string;
    probed: boolean;
    warns: RegExp[];
    ready?: boolean;
  }>([
    { choice: 'auto', answers: true, engineExpected: true, runtime: 'docker', probed: true, warns: [] },
    // An engine that should be there but is silent is waited for, never replaced by host processes.
    {
      choice: 'auto',
      answers: false,
      engineExpected: true,
      runtime: 'docker',
      probed: true,
      warns: [WAITING],
      ready: false,
    },
    {
      choice: 'auto',
      answers: false,
      engineExpected: false,
      runtime: 'local',
      probed: true,
      warns: [LOCAL_WARNING],
    },
    { choice: 'docker', answers: true, engineExpected: true, runtime: 'docker', probed: true, warns: [] },
    {
      choice: 'local',
      answers: true,
      engineExpected: true,
      runtime: 'local',
      probed: false,
      warns: [LOCAL_WARNING],
    },
    {
      choice: 'local',
      answers: false,
      engineExpected: false,
      runtime: 'local',
      probed: false,
      warns: [LOCAL_WARNING],
    },
    { choice: 'fake', answers: true, engineExpected: false, runtime: 'fake', probed: false, warns: [] },
  ])(
    '--runtime $choice, docker answering: $answers, an engine expected: $engineExpected -> $runtime',
    async ({ choice, answers, engineExpected, runtime, probed, warns, ready = true }) => {
      const { logger, lines } = capturingLogger();
      const docker = engine(answers);
      const selected = await selectRuntime({
        choice,
        dataDir,
        logger,
        simulatedGpus: true,
        engine: docker,
        machine: engineExpected ? engineHere : noEngine,
        uid: 1000,
      });
      expect(selected.name).toBe(runtime);
      expect(runtimeReadiness(selected).ready).toBe(ready);
      expect(docker.reachable).toHaveBeenCalledTimes(probed ? 1 : 0);
      const warnings = lines.filter((line) => line.level === 40).map((line) => line.msg);
      expect(warnings).toEqual(warns.map((w) => expect.stringMatching(w)));
      await selected.close();
    },
  );

  it('waits for a silent engine that should be there, and runs Docker once it answers', async () => {
    const { logger, lines } = capturingLogger();
    const timers = new ManualTimers();
    let answers = false;
    const docker = { ...engine(false), reachable: vi.fn(async () => answers) };
    const selected = await selectRuntime({
      choice: 'auto',
      dataDir,
      logger,
      simulatedGpus: true,
      engine: docker,
      machine: engineHere,
      uid: 0,
      timers,
    });
    expect(runtimeReadiness(selected)).toEqual({
      ready: false,
      waitingFor: 'the Docker engine at /run/corral-test/docker.sock',
    });
    // Nothing runs while waiting: not on the host, not anywhere.
    await expect(selected.list({})).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    await timers.advanceSettling(2_000);
    expect(runtimeReadiness(selected).ready).toBe(false);
    answers = true;
    const ready = runtimeReady(selected);
    await timers.advanceSettling(2_000);
    await expect(ready).resolves.toBe(true);
    expect(runtimeReadiness(selected)).toEqual({ ready: true });
    expect(lines.filter((l) => l.level === 40)).toHaveLength(1);
    expect(lines.map((l) => l.msg)).toContain('the Docker engine answers; workers can run');
    await selected.close();
  });

  it.each<{ uid: number; allowRoot: boolean; refused: boolean }>([
    { uid: 0, allowRoot: false, refused: true },
    { uid: 0, allowRoot: true, refused: false },
    { uid: 1000, allowRoot: false, refused: false },
  ])(
    '--runtime local as uid $uid, allowRoot $allowRoot: workers refused $refused',
    async ({ uid, allowRoot, refused }) => {
      const { logger, lines } = capturingLogger();
      const runtime = await selectRuntime({
        choice: 'local',
        dataDir,
        logger,
        simulatedGpus: true,
        uid,
        allowRoot,
      });
      expect(runtime.name).toBe('local');
      const refusals = lines.filter((l) => String(l.msg).startsWith('refusing the local runtime as root'));
      if (refused) {
        // The server still runs; one line says why no worker will start, and each start fails with it.
        expect(refusals).toHaveLength(1);
        expect(refusals[0]?.msg).toMatch(
          /^refusing the local runtime as root: .*would run as root on this host.*--local-allow-root \(CORRAL_LOCAL_ALLOW_ROOT=1\)/,
        );
        await expect(
          runtime.create({
            workerId: 'w1',
            endpointId: 'e1',
            ownerId: 'o1',
            revision: 1,
            image: 'local',
            command: ['touch', path.join(dataDir, 'never')],
            env: {},
            port: 8000,
            gpus: [],
            volumes: [],
            labels: {},
          }),
        ).rejects.toMatchObject({
          code: 'RUNTIME_ERROR',
          message: expect.stringMatching(/^refusing the local runtime as root/),
        });
      } else {
        expect(refusals).toHaveLength(0);
      }
      await runtime.close();
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
