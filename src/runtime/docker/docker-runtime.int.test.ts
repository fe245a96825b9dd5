/**
 * DockerRuntime against the real engine, for what is Docker's own (the shared behaviour is in
 * docker.contract.int.test.ts): published port, volumes, GPU env, command, exit codes, pulls, an unreachable engine.
 */
import { randomUUID } from 'node:crypto';
import Docker from 'dockerode';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { integrationAvailable } from '../../../test/support/integration.js';
import { collect, eventually, testWorkerSpec } from '../../../test/support/runtime-contract.js';
import { dockerAvailable, ensureTestImage, removeLabelled } from '../../../test/support/test-image.js';
import { DEFAULT_SANDBOX } from '../../config/config.js';
import { LABELS, type PullProgress, RuntimeError, type RuntimeEvent, type WorkerSpec } from '../types.js';
import { DockerRuntime, dockerReachable } from './docker-runtime.js';
import { type DockerInfo, engineLimits } from './engine-limits.js';

const RUN_LABEL = 'corral.dev/test-run';

const withDocker = integrationAvailable(
  'Docker',
  dockerAvailable(),
  'start dockerd (or run scripts/provision.sh) so that `docker info` answers',
);

describe.runIf(withDocker)('DockerRuntime (Docker engine)', () => {
  const run = randomUUID().slice(0, 8);
  const docker = new Docker();
  const runtime = new DockerRuntime({
    docker,
    logger: pino({ level: 'silent' }),
    namePrefix: `corral-rt-${run}-`,
    requestGpuDevices: false,
  });
  const events: RuntimeEvent[] = [];
  let unwatch = () => {};
  let image = '';
  let n = 0;

  function spec(overrides: Partial<WorkerSpec> = {}): WorkerSpec {
    n += 1;
    return testWorkerSpec(
      { image, workerId: `rt${run}w${n}`, endpointId: `rt${run}e`, ...overrides },
      { [RUN_LABEL]: run },
    );
  }

  async function get(address: { host: string; port: number } | undefined, path: string): Promise<unknown> {
    if (!address) throw new Error('no address');
    let body: unknown;
    await eventually(async () => {
      const response = await fetch(`http://${address.host}:${address.port}${path}`, {
        signal: AbortSignal.timeout(2_000),
      });
      expect(response.status).toBe(200);
      body = await response.json();
    });
    return body;
  }

  beforeAll(async () => {
    image = await ensureTestImage();
    unwatch = runtime.watch((event) => events.push(event));
  }, 180_000);

  afterAll(async () => {
    unwatch();
    await runtime.close();
    await removeLabelled(docker, `${RUN_LABEL}=${run}`);
  });

  it('says which image it holds and where that came from: the test image was built here, so no RepoDigests', async () => {
    const local = await runtime.localImage(image);
    expect(local).toEqual({ id: expect.stringMatching(/^sha256:/), repoDigests: [] });
    expect(await runtime.localImage(`corral-absent-${run}:1`)).toBeUndefined();
  });

  it('dockerReachable: true here, false for a socket nobody listens on', async () => {
    expect(await dockerReachable(docker)).toBe(true);
    const started = Date.now();
    expect(await dockerReachable(new Docker({ socketPath: `/tmp/corral-none-${run}.sock` }))).toBe(false);
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('runs a worker from a local image without pulling, on 127.0.0.1, with its env, GPUs, volumes and labels', async () => {
    const progress: PullProgress[] = [];
    const s = spec({
      gpus: [
        { index: 0, uuid: 'GPU-simulated-h100-80g-0' },
        { index: 1, uuid: 'GPU-simulated-h100-80g-1' },
      ],
      volumes: [
        { type: 'local', name: 'scratch', sizeGB: 1, mountPath: '/scratch' },
        { type: 'network', hostPath: '/tmp', mountPath: '/shared' },
      ],
    });
    const worker = await runtime.create(s, (p) => progress.push(p));
    expect(progress).toEqual([]);
    expect(worker.address?.host).toBe('127.0.0.1');
    expect(worker.gpuUuids).toEqual(['GPU-simulated-h100-80g-0', 'GPU-simulated-h100-80g-1']);
    expect(await get(worker.address, '/env')).toMatchObject({
      CORRAL_WORKER_ID: s.workerId,
      NVIDIA_VISIBLE_DEVICES: 'GPU-simulated-h100-80g-0,GPU-simulated-h100-80g-1',
      gpus: ['GPU-simulated-h100-80g-0', 'GPU-simulated-h100-80g-1'],
    });

    const [container] = await docker.listContainers({
      filters: { label: [`${LABELS.worker}=${s.workerId}`] },
    });
    const info = await docker.getContainer(container?.Id ?? '').inspect();
    expect(info.Name).toBe(`/corral-rt-${run}-${s.workerId}`);
    expect(info.HostConfig.RestartPolicy?.Name).toBe('no');
    const bindings = info.HostConfig.PortBindings as Record<string, { HostIp: string }[]>;
    expect(bindings['8000/tcp']?.[0]?.HostIp).toBe('127.0.0.1');
    expect(info.Mounts.map((m) => [m.Type, m.Destination]).sort()).toEqual([
      ['bind', '/shared'],
      ['volume', '/scratch'],
    ]);
    const volumes = await docker.listVolumes({ filters: { label: [`${LABELS.worker}=${s.workerId}`] } });
    expect(volumes.Volumes.map((v) => v.Name)).toEqual([`corral-rt-${run}-${s.workerId}-0`]);
    expect(volumes.Volumes[0]?.Labels).toMatchObject({ [LABELS.endpoint]: s.endpointId, [RUN_LABEL]: run });

    const listed = await runtime.list({ [RUN_LABEL]: run, [LABELS.worker]: s.workerId });
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({ workerId: s.workerId, phase: 'running', address: worker.address });

    await runtime.remove(s.workerId, { graceSeconds: 2 });
    expect(
      await docker.listContainers({ all: true, filters: { label: [`${LABELS.worker}=${s.workerId}`] } }),
    ).toEqual([]);
    const after = await docker.listVolumes({ filters: { label: [`${LABELS.worker}=${s.workerId}`] } });
    expect(after.Volumes ?? []).toEqual([]);
  });

  it('worker networks take /24 blocks of the configured pool; a full pool fails the start naming the setting', async () => {
    const pooled = new DockerRuntime({
      docker,
      logger: pino({ level: 'silent' }),
      namePrefix: `corral-rt-${run}-pool-`,
      requestGpuDevices: false,
      // Two blocks at the top of the default pool, clear of what the other suites take from its bottom.
      sandbox: { ...DEFAULT_SANDBOX, subnets: { pool: '172.31.254.0/23', prefixLength: 24 } },
    });
    const subnetOf = async (workerId: string) => {
      const [container] = await docker.listContainers({
        filters: { label: [`${LABELS.worker}=${workerId}`] },
      });
      const networks = Object.values(container?.NetworkSettings.Networks ?? {});
      const network = (await docker.getNetwork(networks[0]?.NetworkID ?? '').inspect()) as {
        IPAM: { Config: { Subnet: string }[] };
      };
      return network.IPAM.Config[0]?.Subnet;
    };
    const started: string[] = [];
    try {
      // Two owners' first workers start together: each gets a network, and the two never share a block.
      const [a, b] = await Promise.all(
        [spec({ ownerId: `${run}-a` }), spec({ ownerId: `${run}-b` })].map((s) => pooled.create(s)),
      );
      if (!a || !b) throw new Error('two workers expected');
      started.push(a.workerId, b.workerId);
      const [subnetA, subnetB] = [await subnetOf(a.workerId), await subnetOf(b.workerId)];
      expect([subnetA, subnetB].sort()).toEqual(['172.31.254.0/24', '172.31.255.0/24']);
      await expect(pooled.create(spec({ ownerId: `${run}-c` }))).rejects.toThrow(
        /no \/24 subnet left for a worker network in 172\.31\.254\.0\/23.*workers\.sandbox\.network\.subnetPool/,
      );
      // The last worker of an owner takes its network, and so its block, with it.
      await pooled.remove(a.workerId, { graceSeconds: 1 });
      const c = await pooled.create(spec({ ownerId: `${run}-c` }));
      started.push(c.workerId);
      expect(await subnetOf(c.workerId)).toBe(subnetA);
    } finally {
      for (const workerId of started)
        await pooled.remove(workerId, { graceSeconds: 1 }).catch(() => undefined);
      await pooled.close();
    }
  });

  it('a command replaces the image default; stdout and stderr both reach the log', async () => {
    const s = spec({
      command: ['-e', "console.log('out line'); console.error('err line'); setInterval(() => {}, 1000)"],
    });
    await runtime.create(s);
    await eventually(async () => {
      const lines = await collect(runtime.logs(s.workerId, { follow: false }));
      expect(lines).toEqual(expect.arrayContaining(['out line', 'err line']));
    });
    await runtime.remove(s.workerId, { graceSeconds: 0 });
  });

  it('a worker that exits: watch and list report its exit code', async () => {
    const s = spec({ command: ['-e', 'setTimeout(() => process.exit(3), 300)'] });
    await runtime.create(s);
    await eventually(() =>
      expect(events).toContainEqual({ type: 'exited', workerId: s.workerId, exitCode: 3 }),
    );
    // The engine's listing may lag its die event by a moment.
    await eventually(async () => {
      const [listed] = await runtime.list({ [LABELS.worker]: s.workerId });
      expect(listed).toMatchObject({ phase: 'exited', exitCode: 3, message: 'exited with code 3' });
      expect(listed?.address).toBeUndefined();
    });
    expect(await runtime.inspect(s.workerId)).toMatchObject({ phase: 'exited', exitCode: 3 });
    await runtime.remove(s.workerId);
    await eventually(() => expect(events).toContainEqual({ type: 'removed', workerId: s.workerId }));
  });

  it('stats of a running worker are numbers', async () => {
    const s = spec();
    await runtime.create(s);
    const stats = await runtime.stats(s.workerId);
    expect(stats?.cpuPercent).toEqual(expect.any(Number));
    expect(stats?.memoryBytes).toBeGreaterThan(0);
    await runtime.remove(s.workerId, { graceSeconds: 0 });
  });

  it('a start the engine refuses (GPU it cannot give) is RUNTIME_ERROR and leaves no container or volume', async () => {
    const strict = new DockerRuntime({
      docker,
      logger: pino({ level: 'silent' }),
      namePrefix: `corral-rt-${run}-`,
    });
    const s = spec({
      gpus: [{ index: 0, uuid: 'GPU-00000000-dead-beef-0000-000000000000' }],
      volumes: [{ type: 'local', name: 'scratch', sizeGB: 1, mountPath: '/scratch' }],
    });
    const error = await strict.create(s).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RuntimeError);
    expect((error as RuntimeError).code).toBe('RUNTIME_ERROR');
    expect((error as RuntimeError).message).toContain(s.workerId);
    const label = `${LABELS.worker}=${s.workerId}`;
    expect(await docker.listContainers({ all: true, filters: { label: [label] } })).toEqual([]);
    expect((await docker.listVolumes({ filters: { label: [label] } })).Volumes ?? []).toEqual([]);
    await strict.close();
  });

  it('memory limit and rootfs size: set where the engine takes them; a refused size limit is dropped once, with a warning', async () => {
    const warnings: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => warnings.push(JSON.parse(line).msg) });
    const limited = new DockerRuntime({
      docker,
      logger,
      namePrefix: `corral-rt-${run}-`,
      requestGpuDevices: false,
      enforceRootfsSize: true,
    });
    const inspect = async (workerId: string) => {
      const [container] = await docker.listContainers({
        filters: { label: [`${LABELS.worker}=${workerId}`] },
      });
      return (await docker.getContainer(container?.Id ?? '').inspect()).HostConfig;
    };
    const supported = engineLimits((await docker.info()) as DockerInfo).rootfsSize;
    const first = spec({ rootfsSizeGB: 10, memoryBytes: 256 * 1024 ** 2 });
    await limited.create(first);
    const host = await inspect(first.workerId);
    expect(host.Memory).toBe(256 * 1024 ** 2);
    if (supported && limited.enforcesRootfsSize) {
      // xfs with pquota, btrfs or zfs: the engine took it.
      expect(host.StorageOpt).toEqual({ size: '10G' });
    } else {
      // This engine's driver cannot (overlay2 on ext4 here): the worker runs all the same, without the limit.
      expect(limited.enforcesRootfsSize).toBe(false);
      expect(host.StorageOpt ?? null).toBeNull();
      expect(warnings).toEqual([
        'the engine refuses a rootfs size limit; workers run without one from now on',
      ]);
      const second = spec({ rootfsSizeGB: 10 });
      await limited.create(second);
      expect(warnings).toHaveLength(1);
      await limited.remove(second.workerId, { graceSeconds: 0 });
    }
    await limited.remove(first.workerId, { graceSeconds: 0 });
    await limited.close();
  });

  it('a nonexistent image fails with IMAGE_PULL_FAILED within seconds, naming the image; nothing is left', async () => {
    const s = spec({ image: 'corral-does-not-exist:nope' });
    const started = Date.now();
    const error = await runtime.create(s).catch((e: unknown) => e);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(error).toBeInstanceOf(RuntimeError);
    expect((error as RuntimeError).code).toBe('IMAGE_PULL_FAILED');
    expect((error as RuntimeError).message).toContain('corral-does-not-exist:nope');
    expect(await runtime.list({ [LABELS.worker]: s.workerId })).toEqual([]);
  });

  it('a misspelt name of a local image names the local one: no such image here or at its registry, did you mean', async () => {
    const colon = image.lastIndexOf(':');
    const typo = `${image.slice(0, colon - 1)}${image.slice(colon)}`; // one letter short of the test image
    const error = await runtime.prepareImage({ image: typo }).catch((e: unknown) => e);
    expect((error as RuntimeError).code).toBe('IMAGE_PULL_FAILED');
    expect((error as RuntimeError).message).toMatch(
      new RegExp(`^no image ${typo} on this machine or its registry \\(.+\\); did you mean ${image}\\?$`),
    );
  });

  it('a pull with registry credentials asks for them once and fails without the password in the message', async () => {
    let asked = 0;
    const s = spec({
      image: 'registry.invalid:5000/corral/app:1',
      registryAuth: async () => {
        asked += 1;
        return { username: 'bob', password: 's3cret-pa55', server: 'registry.invalid:5000' };
      },
    });
    const progress: PullProgress[] = [];
    const error = await runtime.create(s, (p) => progress.push(p)).catch((e: unknown) => e);
    expect((error as RuntimeError).code).toBe('IMAGE_PULL_FAILED');
    expect((error as RuntimeError).message).not.toContain('s3cret-pa55');
    expect(progress[0]?.message).toContain('pulling registry.invalid:5000/corral/app:1');
    expect(asked).toBe(1);
  });

  it('an image present locally never asks for the registry credentials', async () => {
    let asked = 0;
    const s = spec({
      registryAuth: async () => {
        asked += 1;
        return { username: 'bob', password: 's3cret-pa55', server: '' };
      },
    });
    await runtime.create(s);
    expect(asked).toBe(0);
    await runtime.remove(s.workerId, { graceSeconds: 0 });
  });

  it('an unreachable engine is UNAVAILABLE, naming the socket', async () => {
    const socketPath = `/tmp/corral-none-${run}.sock`;
    const offline = new DockerRuntime({
      docker: new Docker({ socketPath }),
      logger: pino({ level: 'silent' }),
    });
    for (const attempt of [() => offline.list({}), () => offline.create(spec()), () => offline.remove('w')]) {
      const error = await attempt().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RuntimeError);
      expect((error as RuntimeError).code).toBe('UNAVAILABLE');
      expect((error as RuntimeError).message).toContain(`cannot reach the Docker engine at ${socketPath}`);
    }
    await offline.close();
  });
});
