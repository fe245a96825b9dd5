import type { ContainerInfo, ContainerInspectInfo } from 'dockerode';
import { describe, expect, it } from 'vitest';
import { LABELS } from '../types.js';
import { DOCKER_LABELS } from './container-spec.js';
import {
  computeStats,
  eventFromDocker,
  exitCodeFromStatus,
  phaseOf,
  publicLabels,
  workerFromInspect,
  workerFromListing,
} from './worker-state.js';

const labels = {
  [LABELS.managed]: 'true',
  [LABELS.endpoint]: 'ep1',
  [LABELS.worker]: 'w1',
  [LABELS.revision]: '4',
  [LABELS.owner]: 'o1',
  [DOCKER_LABELS.port]: '8000',
  [DOCKER_LABELS.gpus]: 'GPU-a,GPU-b',
  [DOCKER_LABELS.keys]:
    'corral.dev/endpoint,corral.dev/managed,corral.dev/owner,corral.dev/revision,corral.dev/worker',
  'corral.dev/test-image': '1',
  maintainer: 'someone',
};

const own = {
  [LABELS.managed]: 'true',
  [LABELS.endpoint]: 'ep1',
  [LABELS.worker]: 'w1',
  [LABELS.revision]: '4',
  [LABELS.owner]: 'o1',
};

describe('phaseOf', () => {
  it.each([
    ['created', 'starting'],
    ['restarting', 'starting'],
    ['running', 'running'],
    ['paused', 'running'],
    ['exited', 'exited'],
    ['dead', 'exited'],
    ['removing', 'exited'],
  ] as const)('%s -> %s', (state, phase) => {
    expect(phaseOf(state)).toBe(phase);
  });
});

describe('exitCodeFromStatus', () => {
  it.each([
    ['Exited (0) 3 seconds ago', 0],
    ['Exited (137) About a minute ago', 137],
    ['Exited (-1) 1 second ago', -1],
    ['Up 5 seconds', undefined],
    ['Created', undefined],
    ['', undefined],
  ])('%j -> %j', (status, code) => {
    expect(exitCodeFromStatus(status)).toBe(code);
  });
});

describe('publicLabels', () => {
  it('keeps only the worker own labels, not bookkeeping or image labels', () => {
    expect(publicLabels(labels)).toEqual(own);
  });
  it('without the keys label, drops only the bookkeeping labels', () => {
    const { [DOCKER_LABELS.keys]: _keys, ...rest } = labels;
    expect(publicLabels(rest)).toEqual({ ...own, 'corral.dev/test-image': '1', maintainer: 'someone' });
  });
  it('tolerates null', () => {
    expect(publicLabels(null)).toEqual({});
  });
});

function listing(overrides: Partial<ContainerInfo>): ContainerInfo {
  return {
    Id: 'c1',
    Names: ['/corral-w1'],
    Image: 'app',
    ImageID: 'sha256:x',
    Command: '',
    Created: 1_700_000_000,
    Ports: [],
    Labels: labels,
    State: 'running',
    Status: 'Up 2 seconds',
    HostConfig: { NetworkMode: 'default' },
    NetworkSettings: { Networks: {} },
    Mounts: [],
    ...overrides,
  };
}

describe('workerFromListing', () => {
  it('a running container: address from the published app port', () => {
    const worker = workerFromListing(
      listing({
        Ports: [
          { IP: '', PrivatePort: 9000, PublicPort: 0, Type: 'tcp' },
          { IP: '127.0.0.1', PrivatePort: 8000, PublicPort: 49153, Type: 'tcp' },
        ],
      }),
      '127.0.0.1',
    );
    expect(worker).toEqual({
      workerId: 'w1',
      endpointId: 'ep1',
      revision: 4,
      labels: own,
      gpuUuids: ['GPU-a', 'GPU-b'],
      phase: 'running',
      address: { host: '127.0.0.1', port: 49153 },
      message: 'Up 2 seconds',
      createdAt: 1_700_000_000_000,
    });
  });

  it('a wildcard binding is reached on the host ip', () => {
    const worker = workerFromListing(
      listing({ Ports: [{ IP: '0.0.0.0', PrivatePort: 8000, PublicPort: 3000, Type: 'tcp' }] }),
      '127.0.0.1',
    );
    expect(worker.address).toEqual({ host: '127.0.0.1', port: 3000 });
  });

  it('an exited container: exit code from the status, no address', () => {
    const worker = workerFromListing(
      listing({ State: 'exited', Status: 'Exited (3) 1 second ago' }),
      '127.0.0.1',
    );
    expect(worker).toMatchObject({ phase: 'exited', exitCode: 3, message: 'exited with code 3' });
    expect(worker.address).toBeUndefined();
  });

  it('a created container is starting', () => {
    expect(workerFromListing(listing({ State: 'created', Status: 'Created' }), '127.0.0.1').phase).toBe(
      'starting',
    );
  });
});

describe('workerFromInspect', () => {
  function inspect(
    state: Partial<ContainerInspectInfo['State']>,
    ports: unknown = {},
    memoryBytes = 0,
  ): ContainerInspectInfo {
    return {
      Id: 'c1',
      Created: '2024-01-02T03:04:05.678Z',
      State: {
        Status: 'running',
        Running: true,
        Paused: false,
        Restarting: false,
        OOMKilled: false,
        Dead: false,
        Pid: 1,
        ExitCode: 0,
        Error: '',
        StartedAt: '',
        FinishedAt: '',
        ...state,
      },
      Config: { Labels: labels },
      HostConfig: { Memory: memoryBytes },
      NetworkSettings: { Ports: ports },
    } as unknown as ContainerInspectInfo;
  }

  it('running with a published port', () => {
    const worker = workerFromInspect(
      inspect({}, { '8000/tcp': [{ HostIp: '127.0.0.1', HostPort: '32768' }], '9000/tcp': null }),
      '127.0.0.1',
    );
    expect(worker).toMatchObject({
      workerId: 'w1',
      phase: 'running',
      address: { host: '127.0.0.1', port: 32768 },
      createdAt: Date.parse('2024-01-02T03:04:05.678Z'),
      labels: own,
    });
  });

  const MIB = 1024 * 1024;
  it.each([
    {
      why: 'the engine says OOMKilled, with a limit',
      state: { ExitCode: 137, OOMKilled: true },
      memory: 256 * MIB,
      reason: 'out-of-memory',
      message: 'ran out of memory: limit 256 MiB (exit code 137)',
    },
    {
      why: 'killed (137) under a limit, not flagged: a docker kill, not an OOM',
      state: { ExitCode: 137, OOMKilled: false },
      memory: 512 * MIB,
      reason: undefined,
      message: 'killed (signal 9, exit code 137)',
    },
    {
      why: 'the engine says OOMKilled, no limit of its own (the host ran out)',
      state: { ExitCode: 137, OOMKilled: true },
      memory: 0,
      reason: 'out-of-memory',
      message: 'ran out of memory: no limit known (exit code 137)',
    },
    {
      why: 'killed (137) without a limit',
      state: { ExitCode: 137, OOMKilled: false },
      memory: 0,
      reason: undefined,
      message: 'killed (signal 9, exit code 137)',
    },
    {
      why: 'stopped by SIGTERM (143)',
      state: { ExitCode: 143, OOMKilled: false },
      memory: 256 * MIB,
      reason: undefined,
      message: 'killed (signal 15, exit code 143)',
    },
    {
      why: 'an ordinary exit under a limit',
      state: { ExitCode: 1, OOMKilled: false },
      memory: 256 * MIB,
      reason: undefined,
      message: 'exited with code 1',
    },
  ])('exit reason when $why', ({ state, memory, reason, message }) => {
    const worker = workerFromInspect(
      inspect({ Status: 'exited', Running: false, ...state }, {}, memory),
      '127.0.0.1',
    );
    expect(worker).toMatchObject({ phase: 'exited', exitCode: state.ExitCode, message });
    expect(worker.exitReason).toBe(reason);
    expect(worker.memoryLimitBytes).toBe(memory > 0 ? memory : undefined);
  });

  it('a running worker under a limit says its limit and no exit reason', () => {
    const worker = workerFromInspect(inspect({}, {}, 256 * MIB), '127.0.0.1');
    expect(worker).toMatchObject({ phase: 'running', memoryLimitBytes: 256 * MIB });
    expect(worker.exitReason).toBeUndefined();
  });

  it('failed to start', () => {
    const worker = workerFromInspect(
      inspect({ Status: 'exited', ExitCode: 128, Error: 'exec: "nope": executable file not found' }),
      '127.0.0.1',
    );
    expect(worker.message).toBe('exited with code 128: exec: "nope": executable file not found');
  });
});

describe('computeStats', () => {
  it('cpu percent like docker stats: delta over system delta times cpus', () => {
    const stats = computeStats({
      cpu_stats: { cpu_usage: { total_usage: 300 }, system_cpu_usage: 2_000, online_cpus: 4 },
      precpu_stats: { cpu_usage: { total_usage: 100 }, system_cpu_usage: 1_000 },
      memory_stats: { usage: 10_000, stats: { total_inactive_file: 1_000 } },
    });
    expect(stats).toEqual({ cpuPercent: 80, memoryBytes: 9_000 });
  });

  it('cgroup v2: inactive_file; cpus from percpu_usage', () => {
    const stats = computeStats({
      cpu_stats: { cpu_usage: { total_usage: 150, percpu_usage: [1, 2] }, system_cpu_usage: 1_100 },
      precpu_stats: { cpu_usage: { total_usage: 100 }, system_cpu_usage: 1_000 },
      memory_stats: { usage: 5_000, stats: { inactive_file: 500 } },
    });
    expect(stats).toEqual({ cpuPercent: 100, memoryBytes: 4_500 });
  });

  it('a stopped container (empty stats) reads as zeros', () => {
    expect(computeStats({ cpu_stats: {}, precpu_stats: {}, memory_stats: {} })).toEqual({
      cpuPercent: 0,
      memoryBytes: 0,
    });
    expect(computeStats({})).toEqual({ cpuPercent: 0, memoryBytes: 0 });
  });
});

describe('eventFromDocker', () => {
  const actor = (attributes: Record<string, string>) => ({
    ID: 'c1',
    Attributes: { [LABELS.managed]: 'true', [LABELS.worker]: 'w1', ...attributes },
  });
  it.each([
    [
      { Type: 'container', Action: 'start', Actor: actor({}) },
      { type: 'started', workerId: 'w1' },
    ],
    [
      { Type: 'container', Action: 'die', Actor: actor({ exitCode: '137' }) },
      { type: 'exited', workerId: 'w1', exitCode: 137 },
    ],
    [
      { Type: 'container', Action: 'destroy', Actor: actor({}) },
      { type: 'removed', workerId: 'w1' },
    ],
    [
      { status: 'die', Actor: actor({ exitCode: '2' }) },
      { type: 'exited', workerId: 'w1', exitCode: 2 },
    ],
    [
      { Type: 'container', Action: 'restart', Actor: actor({}) },
      { type: 'started', workerId: 'w1' },
    ],
    [
      { Type: 'container', Action: 'pause', Actor: actor({}) },
      { type: 'paused', workerId: 'w1' },
    ],
    [
      { Type: 'container', Action: 'unpause', Actor: actor({}) },
      { type: 'resumed', workerId: 'w1' },
    ],
    [
      { Type: 'container', Action: 'kill', Actor: actor({ signal: '15' }) },
      { type: 'stopping', workerId: 'w1' },
    ],
    [
      { Type: 'container', Action: 'kill', Actor: actor({ signal: '9' }) },
      { type: 'stopping', workerId: 'w1' },
    ],
    [{ Type: 'container', Action: 'kill', Actor: actor({ signal: '1' }) }, undefined],
    [{ Type: 'container', Action: 'kill', Actor: actor({ signal: '10' }) }, undefined],
    [{ Type: 'container', Action: 'stop', Actor: actor({}) }, undefined],
    [{ Type: 'container', Action: 'oom', Actor: actor({}) }, undefined],
    [{ Type: 'network', Action: 'connect', Actor: actor({}) }, undefined],
    [{ Type: 'container', Action: 'start', Actor: { ID: 'c2', Attributes: { name: 'other' } } }, undefined],
  ])('%j -> %j', (message, event) => {
    expect(eventFromDocker(message)).toEqual(event);
  });
});
