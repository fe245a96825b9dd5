/**
 * Exit reasons on the real engine (issue 29, item 10): a worker under a memory limit that is `docker kill`ed ends
 * with 137 as an OOM kill does, and is reported as killed, not as out of memory; one that allocates past its limit
 * is reported as out of memory, because the engine says so (State.OOMKilled).
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import Docker from 'dockerode';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { integrationAvailable } from '../../../test/support/integration.js';
import { eventually, testWorkerSpec } from '../../../test/support/runtime-contract.js';
import { dockerAvailable, ensureTestImage, removeLabelled } from '../../../test/support/test-image.js';
import { LABELS, type WorkerSpec } from '../types.js';
import { DockerRuntime } from './docker-runtime.js';

const RUN_LABEL = 'corral.dev/test-run';
const LIMIT = 128 * 1024 * 1024;
const withDocker = integrationAvailable(
  'Docker',
  dockerAvailable(),
  'start dockerd (scripts/provision.sh does)',
);

describe.runIf(withDocker)('exit reasons on the Docker engine', () => {
  const run = randomUUID().slice(0, 8);
  const docker = new Docker();
  const runtime = new DockerRuntime({
    docker,
    logger: pino({ level: 'silent' }),
    namePrefix: `corral-exit-${run}-`,
    requestGpuDevices: false,
  });
  let image = '';

  const spec = (name: string, env: Record<string, string> = {}): WorkerSpec => {
    const base = testWorkerSpec(
      { image, workerId: `ex${run}${name}`, endpointId: `ex${run}e`, memoryBytes: LIMIT },
      { [RUN_LABEL]: run },
    );
    return { ...base, env: { ...base.env, ...env } };
  };

  beforeAll(async () => {
    image = await ensureTestImage();
  }, 180_000);

  afterAll(async () => {
    await runtime.close();
    await removeLabelled(docker, `${RUN_LABEL}=${run}`);
  });

  it('docker kill under a memory limit: killed (signal 9), not out of memory', async () => {
    const s = spec('kill');
    await runtime.create(s);
    const container = execFileSync(
      'docker',
      ['ps', '-q', '--filter', `label=${LABELS.worker}=${s.workerId}`],
      {
        encoding: 'utf8',
      },
    ).trim();
    expect(container).not.toBe('');
    execFileSync('docker', ['kill', container]);
    const worker = await eventually(async () => {
      const found = await runtime.inspect(s.workerId);
      expect(found?.phase).toBe('exited');
      return found;
    }, 20_000);
    expect(worker).toMatchObject({
      exitCode: 137,
      memoryLimitBytes: LIMIT,
      message: 'killed (signal 9, exit code 137)',
    });
    expect(worker?.exitReason).toBeUndefined();
  }, 60_000);

  it('allocating past the limit: out of memory, as the engine says', async () => {
    const s = spec('oom', { ALLOCATE_MB: '512' });
    await runtime.create(s);
    const worker = await eventually(async () => {
      const found = await runtime.inspect(s.workerId);
      expect(found?.phase).toBe('exited');
      return found;
    }, 30_000);
    expect(worker).toMatchObject({
      exitCode: 137,
      exitReason: 'out-of-memory',
      message: 'ran out of memory: limit 128 MiB (exit code 137)',
    });
  }, 60_000);
});
