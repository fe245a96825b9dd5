/**
 * A suspended Docker worker's GPU memory is recorded in Corral's data dir (a container's labels are fixed at
 * create): a restarted runtime lists the worker suspended with it; a restore and a removal drop the record.
 */
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import Docker from 'dockerode';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { integrationAvailable } from '../../../test/support/integration.js';
import { MemoryCheckpointer } from '../../../test/support/memory-checkpointer.js';
import { testWorkerSpec } from '../../../test/support/runtime-contract.js';
import { dockerAvailable, ensureTestImage, removeLabelled } from '../../../test/support/test-image.js';
import { SuspendRecords } from '../suspend-records.js';
import { LABELS } from '../types.js';
import { DockerRuntime } from './docker-runtime.js';

const RUN_LABEL = 'corral.dev/test-run';

const withDocker = integrationAvailable(
  'Docker',
  dockerAvailable(),
  'start dockerd (or run scripts/provision.sh) so that `docker info` answers',
);

describe.runIf(withDocker)('Docker idle tiers: the suspended GPU memory record', () => {
  const run = randomUUID().slice(0, 8);
  const docker = new Docker();
  let image = '';
  let dir = '';
  const checkpointer = new MemoryCheckpointer({ gpus: { 'GPU-0': 80e9 } });

  const runtime = () =>
    new DockerRuntime({
      docker,
      logger: pino({ level: 'silent' }),
      namePrefix: `corral-tiers-${run}-`,
      requestGpuDevices: false,
      checkpointer,
      suspendRecords: new SuspendRecords(path.join(dir, 'suspended')),
    });

  beforeAll(async () => {
    image = await ensureTestImage();
    dir = await mkdtemp(path.join(os.tmpdir(), 'corral-docker-tiers-'));
  }, 180_000);

  afterAll(async () => {
    await removeLabelled(docker, `${RUN_LABEL}=${run}`);
    await rm(dir, { recursive: true, force: true });
  });

  it('is written at the suspend, listed back by a restarted runtime, dropped by the restore and the removal', async () => {
    const first = runtime();
    const workerId = `tr${run}`;
    await first.create(testWorkerSpec({ image, workerId, endpointId: `tr${run}e` }, { [RUN_LABEL]: run }));
    const [container] = await docker.listContainers({ filters: { label: [`${LABELS.worker}=${workerId}`] } });
    const pid = (await docker.getContainer(container?.Id ?? '').inspect()).State.Pid;
    checkpointer.addProcess({ pid, gpuUuid: 'GPU-0', usedBytes: 30e9 });
    const record = path.join(dir, 'suspended', `${workerId}.json`);

    await first.idleTiers.freeze(workerId);
    await first.idleTiers.suspend(workerId, { deadlineMs: 5_000 });
    expect(existsSync(record)).toBe(true);
    await first.close();

    const second = runtime();
    expect((await second.list({ [LABELS.worker]: workerId }))[0]).toMatchObject({
      tier: 'suspended',
      suspendedGpuBytes: { 'GPU-0': 30e9 },
    });
    await second.idleTiers.restore(workerId, { deadlineMs: 5_000 });
    expect(existsSync(record)).toBe(false);
    expect(checkpointer.usedBytes('GPU-0')).toBe(30e9);

    await second.idleTiers.freeze(workerId);
    await second.idleTiers.suspend(workerId, { deadlineMs: 5_000 });
    expect(existsSync(record)).toBe(true);
    await second.remove(workerId, { graceSeconds: 1 });
    expect(existsSync(record)).toBe(false);
    await second.close();
  });

  it('asks the driver of a suspended worker once, and never of a frozen one (it would not answer)', async () => {
    const tiers = runtime();
    const workerId = `tq${run}`;
    await tiers.create(testWorkerSpec({ image, workerId, endpointId: `tq${run}e` }, { [RUN_LABEL]: run }));
    const [container] = await docker.listContainers({ filters: { label: [`${LABELS.worker}=${workerId}`] } });
    const pid = (await docker.getContainer(container?.Id ?? '').inspect()).State.Pid;
    checkpointer.addProcess({ pid, gpuUuid: 'GPU-0', usedBytes: 20e9 });
    const listTier = async () => (await tiers.list({ [LABELS.worker]: workerId }))[0]?.tier;

    await tiers.idleTiers.freeze(workerId);
    const before = checkpointer.stateCalls;
    expect([await listTier(), await listTier()]).toEqual(['frozen', 'frozen']);
    expect(checkpointer.stateCalls).toBe(before);

    await tiers.idleTiers.suspend(workerId, { deadlineMs: 5_000 });
    expect([await listTier(), await listTier(), await listTier()]).toEqual([
      'suspended',
      'suspended',
      'suspended',
    ]);
    expect(checkpointer.stateCalls).toBe(before + 1);
    await tiers.remove(workerId, { graceSeconds: 1 });
    await tiers.close();
  });
});
