import { describe, expect, it } from 'vitest';
import { DEFAULT_SANDBOX } from '../../config/config.js';
import { LABELS, type WorkerSpec } from '../types.js';
import { containerSpec, DOCKER_LABELS, localVolumes } from './container-spec.js';
import { NETWORK_LABEL, sandboxHostConfig, workerNetwork } from './sandbox.js';

const options = { hostIp: '127.0.0.1', namePrefix: 'corral-' };

function spec(overrides: Partial<WorkerSpec> = {}): WorkerSpec {
  return {
    workerId: 'w1',
    endpointId: 'ep1',
    ownerId: 'o1',
    revision: 3,
    image: 'registry.example.com/app:1.2',
    command: [],
    env: { PORT: '8000', CORRAL_ENDPOINT_ID: 'ep1', CORRAL_WORKER_ID: 'w1' },
    port: 8000,
    gpus: [],
    volumes: [],
    labels: {
      [LABELS.managed]: 'true',
      [LABELS.endpoint]: 'ep1',
      [LABELS.worker]: 'w1',
      [LABELS.revision]: '3',
      [LABELS.owner]: 'o1',
    },
    ...overrides,
  };
}

describe('containerSpec', () => {
  it('names the container, sets the image and never restarts it', () => {
    const body = containerSpec(spec(), { hostIp: '127.0.0.1', namePrefix: 'test-' });
    expect(body.name).toBe('test-w1');
    expect(body.Image).toBe('registry.example.com/app:1.2');
    expect(body.HostConfig.RestartPolicy).toEqual({ Name: 'no' });
    expect(body.Tty).toBe(false);
  });

  it.each([
    { port: 8000, hostIp: '127.0.0.1' },
    { port: 80, hostIp: '127.0.0.1' },
    { port: 65535, hostIp: '10.0.0.5' },
  ])('publishes $port/tcp on $hostIp with an ephemeral host port', ({ port, hostIp }) => {
    const body = containerSpec(spec({ port }), { ...options, hostIp });
    expect(body.ExposedPorts).toEqual({ [`${port}/tcp`]: {} });
    expect(body.HostConfig.PortBindings).toEqual({ [`${port}/tcp`]: [{ HostIp: hostIp, HostPort: '' }] });
    expect(body.HostConfig.PublishAllPorts).toBeUndefined();
    expect(body.Labels?.[DOCKER_LABELS.port]).toBe(String(port));
  });

  it.each([
    { command: [], Cmd: undefined },
    {
      command: ['python', '-m', 'server', '--port', '8000'],
      Cmd: ['python', '-m', 'server', '--port', '8000'],
    },
    { command: ['sh', '-c', 'echo "a b" && exec app'], Cmd: ['sh', '-c', 'echo "a b" && exec app'] },
  ])('command $command -> Cmd $Cmd', ({ command, Cmd }) => {
    expect(containerSpec(spec({ command }), options).Cmd).toEqual(Cmd);
  });

  it.each<{ name: string; env: Record<string, string>; gpus: WorkerSpec['gpus']; expected: string[] }>([
    {
      name: 'plain envs, no GPU: NVIDIA_VISIBLE_DEVICES=void',
      env: { PORT: '8000', A: 'x=y', EMPTY: '' },
      gpus: [],
      expected: ['PORT=8000', 'A=x=y', 'EMPTY=', 'NVIDIA_VISIBLE_DEVICES=void'],
    },
    {
      name: 'GPUs without NVIDIA_VISIBLE_DEVICES: added from the uuids',
      env: { PORT: '8000' },
      gpus: [
        { index: 0, uuid: 'GPU-aaaa' },
        { index: 1, uuid: 'GPU-bbbb' },
      ],
      expected: ['PORT=8000', 'NVIDIA_VISIBLE_DEVICES=GPU-aaaa,GPU-bbbb'],
    },
    {
      name: 'NVIDIA_VISIBLE_DEVICES from the controller is kept, not duplicated',
      env: { PORT: '8000', NVIDIA_VISIBLE_DEVICES: 'GPU-aaaa' },
      gpus: [{ index: 0, uuid: 'GPU-aaaa' }],
      expected: ['PORT=8000', 'NVIDIA_VISIBLE_DEVICES=GPU-aaaa'],
    },
  ])('env: $name', ({ env, gpus, expected }) => {
    expect(containerSpec(spec({ env, gpus }), options).Env).toEqual(expected);
  });

  it.each([
    { name: 'no GPU', gpus: [], requests: undefined, label: '' },
    {
      name: 'two GPUs',
      gpus: [
        { index: 2, uuid: 'GPU-cccc' },
        { index: 3, uuid: 'GPU-dddd' },
      ],
      requests: [{ Driver: 'nvidia', DeviceIDs: ['GPU-cccc', 'GPU-dddd'], Capabilities: [['gpu']] }],
      label: 'GPU-cccc,GPU-dddd',
    },
    {
      name: 'simulated GPUs: env and label, no device request',
      gpus: [{ index: 0, uuid: 'GPU-simulated-h100-80g-0' }],
      requests: undefined,
      label: 'GPU-simulated-h100-80g-0',
    },
    {
      name: 'a GPU flagged simulated: label only; the real one beside it is requested',
      gpus: [
        { index: 0, uuid: 'GPU-sim-a', simulated: true },
        { index: 1, uuid: 'GPU-eeee' },
      ],
      requests: [{ Driver: 'nvidia', DeviceIDs: ['GPU-eeee'], Capabilities: [['gpu']] }],
      label: 'GPU-sim-a,GPU-eeee',
    },
  ])('GPUs: $name', ({ gpus, requests, label }) => {
    const body = containerSpec(spec({ gpus }), options);
    expect(body.HostConfig.DeviceRequests).toEqual(requests);
    expect(body.Labels?.[DOCKER_LABELS.gpus]).toBe(label);
  });

  it('requestGpuDevices: false keeps the GPU env and label but asks for no device', () => {
    const body = containerSpec(spec({ gpus: [{ index: 0, uuid: 'GPU-aaaa' }] }), {
      ...options,
      requestGpuDevices: false,
    });
    expect(body.HostConfig.DeviceRequests).toBeUndefined();
    expect(body.Env).toContain('NVIDIA_VISIBLE_DEVICES=GPU-aaaa');
    expect(body.Labels?.[DOCKER_LABELS.gpus]).toBe('GPU-aaaa');
  });

  it('labels: the spec labels, identity labels from the spec, and bookkeeping labels', () => {
    const body = containerSpec(
      spec({ labels: { [LABELS.managed]: 'true', 'corral.dev/test-run': 'r1' } }),
      options,
    );
    expect(body.Labels).toEqual({
      [LABELS.managed]: 'true',
      [LABELS.endpoint]: 'ep1',
      [LABELS.worker]: 'w1',
      [LABELS.revision]: '3',
      [LABELS.owner]: 'o1',
      'corral.dev/test-run': 'r1',
      [DOCKER_LABELS.port]: '8000',
      [DOCKER_LABELS.gpus]: '',
      [DOCKER_LABELS.keys]: [
        'corral.dev/endpoint',
        'corral.dev/managed',
        'corral.dev/owner',
        'corral.dev/revision',
        'corral.dev/test-run',
        'corral.dev/worker',
      ].join(','),
    });
  });

  it.each([
    { name: 'no volume', volumes: [], mounts: [], created: [] },
    {
      name: 'a local volume',
      volumes: [{ type: 'local' as const, name: 'scratch', sizeGB: 10, mountPath: '/scratch' }],
      mounts: [{ Type: 'volume', Source: 'corral-w1-0', Target: '/scratch' }],
      created: ['corral-w1-0'],
    },
    {
      name: 'a network volume',
      volumes: [{ type: 'network' as const, hostPath: '/srv/models', mountPath: '/models' }],
      mounts: [{ Type: 'bind', Source: '/srv/models', Target: '/models' }],
      created: [],
    },
    {
      name: 'local, network, local',
      volumes: [
        { type: 'local' as const, name: 'a', sizeGB: 1, mountPath: '/a' },
        { type: 'network' as const, hostPath: '/srv/shared', mountPath: '/shared' },
        { type: 'local' as const, name: 'b', sizeGB: 2, mountPath: '/b' },
      ],
      mounts: [
        { Type: 'volume', Source: 'corral-w1-0', Target: '/a' },
        { Type: 'bind', Source: '/srv/shared', Target: '/shared' },
        { Type: 'volume', Source: 'corral-w1-1', Target: '/b' },
      ],
      created: ['corral-w1-0', 'corral-w1-1'],
    },
    {
      name: 'a read-only network volume',
      volumes: [{ type: 'network' as const, hostPath: '/srv/models', mountPath: '/models', readOnly: true }],
      mounts: [{ Type: 'bind', Source: '/srv/models', Target: '/models', ReadOnly: true }],
      created: [],
    },
  ])('volumes: $name', ({ volumes, mounts, created }) => {
    const s = spec({ volumes });
    expect(containerSpec(s, options).HostConfig.Mounts).toEqual(mounts);
    const toCreate = localVolumes(s, options);
    expect(toCreate.map((volume) => volume.Name)).toEqual(created);
    for (const volume of toCreate) {
      expect(volume.Driver).toBe('local');
      expect(volume.Labels).toMatchObject({ [LABELS.managed]: 'true', [LABELS.worker]: 'w1' });
    }
  });

  it.each([
    { enforceRootfsSize: undefined, rootfsSizeGB: 100, storage: undefined },
    { enforceRootfsSize: false, rootfsSizeGB: 100, storage: undefined },
    { enforceRootfsSize: true, rootfsSizeGB: 100, storage: { size: '100G' } },
    { enforceRootfsSize: true, rootfsSizeGB: undefined, storage: undefined },
  ])(
    'rootfs size $rootfsSizeGB with enforceRootfsSize=$enforceRootfsSize',
    ({ enforceRootfsSize, rootfsSizeGB, storage }) => {
      const body = containerSpec(spec({ rootfsSizeGB }), { ...options, enforceRootfsSize });
      expect(body.HostConfig.StorageOpt).toEqual(storage);
    },
  );

  it.each([
    { memoryBytes: undefined, Memory: undefined, MemorySwap: undefined },
    { memoryBytes: 64 * 1024 ** 3, Memory: 64 * 1024 ** 3, MemorySwap: 64 * 1024 ** 3 },
    { memoryBytes: 512 * 1024 ** 2, Memory: 512 * 1024 ** 2, MemorySwap: 512 * 1024 ** 2 },
  ])(
    'memory limit $memoryBytes: Memory $Memory, no swap beyond it',
    ({ memoryBytes, Memory, MemorySwap }) => {
      const { HostConfig } = containerSpec(spec(memoryBytes === undefined ? {} : { memoryBytes }), options);
      expect(HostConfig.Memory).toBe(Memory);
      expect(HostConfig.MemorySwap).toBe(MemorySwap);
    },
  );

  it('with a sandbox: capabilities, no-new-privileges, pids, logs and the network of its owner, named in a label', () => {
    const body = containerSpec(spec(), { ...options, sandbox: DEFAULT_SANDBOX });
    const network = workerNetwork(spec(), DEFAULT_SANDBOX, 'corral-')?.Name;
    expect(network).toMatch(/^corral-owner-o1-/);
    expect(body.HostConfig).toMatchObject({
      ...sandboxHostConfig(DEFAULT_SANDBOX, network),
      PortBindings: { '8000/tcp': [{ HostIp: '127.0.0.1', HostPort: '' }] },
    });
    expect(body.Labels?.[NETWORK_LABEL]).toBe(network);
  });

  it("with isolation none: the sandbox, on Docker's default bridge, and no network label", () => {
    const body = containerSpec(spec(), {
      ...options,
      sandbox: { ...DEFAULT_SANDBOX, networkIsolation: 'none' },
    });
    expect(body.HostConfig.CapDrop).toEqual(['ALL']);
    expect(body.HostConfig.NetworkMode).toBeUndefined();
    expect(body.Labels?.[NETWORK_LABEL]).toBeUndefined();
  });

  it('does not share arrays with the spec', () => {
    const s = spec({ command: ['a'] });
    const body = containerSpec(s, options);
    body.Cmd?.push('b');
    expect(s.command).toEqual(['a']);
  });
});
