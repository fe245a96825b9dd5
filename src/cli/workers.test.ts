import { afterEach, describe, expect, it } from 'vitest';
import { makeHarness, runCommand } from '../../test/support/cli-harness.js';
import { sampleWireEndpoint } from '../../test/support/wire-fixtures.js';
import type { WireWorker, WorkerMetrics } from '../client/index.js';
import { formatBytes, makeWorkersCommand } from './workers.js';

const PREFIX = '/gpu-instance/openapi/v1/';

afterEach(() => {
  process.exitCode = undefined;
});

const workers: WireWorker[] = [
  {
    id: 'w-1',
    state: { state: 'running', error: '', message: '' },
    log: 'http://127.0.0.1:8080/gpu-instance/openapi/v1/endpoint/worker/log?id=ep-1&worker=w-1',
    metrics: 'http://127.0.0.1:8080/gpu-instance/openapi/v1/endpoint/worker/metrics?id=ep-1&worker=w-1',
    healthy: true,
  },
  {
    id: 'w-2',
    state: { state: 'pending', error: '', message: 'waiting for 1 free GPU of h100-80g' },
    log: '',
    metrics: '',
    healthy: false,
  },
  {
    id: 'w-3',
    state: { state: 'failed', error: 'HEALTH_TIMEOUT', message: 'not healthy within 600s' },
    log: '',
    metrics: '',
    healthy: false,
  },
  {
    id: 'w-4',
    state: { state: 'frozen', error: '', message: 'frozen since 2026-11-26T17:40:12Z (idle)' },
    log: '',
    metrics: '',
    healthy: false,
  },
];

const notFound = {
  status: 404,
  body: { code: 404, reason: 'ENDPOINT_NOT_FOUND', message: 'no endpoint "ep-9"', metadata: {} },
};

describe('corral workers list', () => {
  it("prints a table of the endpoint's workers", async () => {
    const h = makeHarness({
      routes: { 'GET endpoint': { body: { endpoint: sampleWireEndpoint(8000, { workers }) } } },
    });
    await runCommand(makeWorkersCommand(h.deps), ['list', 'ep-1']);
    expect(h.err()).toBe('');
    expect(process.exitCode).toBeUndefined();
    expect(h.out()).toBe(
      [
        'ID   STATE    HEALTHY  ERROR           MESSAGE',
        'w-1  running  yes',
        'w-2  pending  not yet                  waiting for 1 free GPU of h100-80g',
        'w-3  failed   no       HEALTH_TIMEOUT  not healthy within 600s',
        'w-4  frozen   -                        frozen since 2026-11-26T17:40:12Z (idle)',
        '',
      ].join('\n'),
    );
    expect(h.requests).toHaveLength(1);
    expect(h.requests[0]).toMatchObject({
      method: 'GET',
      path: `${PREFIX}endpoint`,
      query: { id: 'ep-1' },
      authorization: 'Bearer sk_env_key',
    });
  });

  it('prints the workers array with --json', async () => {
    const h = makeHarness({
      routes: { 'GET endpoint': { body: { endpoint: sampleWireEndpoint(8000, { workers }) } } },
    });
    await runCommand(makeWorkersCommand(h.deps), ['list', 'ep-1', '--json']);
    expect(JSON.parse(h.out())).toEqual(workers);
  });

  it('says when the endpoint has no workers', async () => {
    const h = makeHarness({ routes: { 'GET endpoint': { body: { endpoint: sampleWireEndpoint(8000) } } } });
    await runCommand(makeWorkersCommand(h.deps), ['list', 'ep-1']);
    expect(h.out()).toBe('Endpoint ep-1 has no workers.\n');
    expect(process.exitCode).toBeUndefined();
  });

  it('reports an API error and exits 1', async () => {
    const h = makeHarness({
      routes: { 'GET endpoint': notFound, 'GET endpoints': { body: { endpoints: [], total: 0 } } },
    });
    await runCommand(makeWorkersCommand(h.deps), ['list', 'ep-9']);
    expect(h.out()).toBe('');
    expect(h.err()).toBe('error: ENDPOINT_NOT_FOUND: no endpoint has the id, appName or name "ep-9"\n');
    expect(process.exitCode).toBe(1);
  });
});

describe('corral workers ended', () => {
  const ended = [
    {
      id: 'ep-1-crash',
      endedAt: '2026-11-21T23:31:02.114Z',
      failed: true,
      reason: 'worker exited with code 3',
      truncated: false,
      log: 'http://127.0.0.1:8080/gpu-instance/openapi/v1/endpoint/worker/log?id=ep-1&worker=ep-1-crash',
    },
    {
      id: 'ep-1-idle',
      endedAt: '2026-11-21T23:20:00.000Z',
      failed: false,
      reason: 'stopped to free its GPUs for a worker of endpoint llama',
      truncated: true,
      log: 'http://127.0.0.1:8080/gpu-instance/openapi/v1/endpoint/worker/log?id=ep-1&worker=ep-1-idle',
    },
    {
      id: 'ep-1-quiet',
      endedAt: '2026-11-21T23:10:00.000Z',
      failed: false,
      reason: 'scaled down',
      truncated: false,
      log: 'http://127.0.0.1:8080/gpu-instance/openapi/v1/endpoint/worker/log?id=ep-1&worker=ep-1-quiet',
    },
  ];
  /** The kept output the log route answers: its first line says the worker ended, then the last `tail` lines. */
  const kept: Record<string, string[]> = {
    'ep-1-crash': ['loading model from /models/sdxl', 'EXIT_ON_START: exiting with code 3'],
    'ep-1-idle': ['line 1', 'line 2', 'line 3', 'line 4'],
    'ep-1-quiet': [],
  };
  const routes = {
    'GET endpoint/worker/ended': { body: { workers: ended } },
    'GET endpoint/worker/log': {
      respond: (request: { query: Record<string, string> }) => {
        const worker = request.query.worker ?? '';
        const lines = kept[worker] ?? [];
        const tail = Number(request.query.tail);
        const text = [`[corral] worker ${worker} ended at 2026-11-21T23:31:02.114Z; its output:`]
          .concat(lines.slice(Math.max(0, lines.length - tail)))
          .map((l) => `${l}\n`)
          .join('');
        return new Response(text, { headers: { 'content-type': 'text/plain; charset=utf-8' } });
      },
    },
  };

  it('lists the ended workers, the newest first: when, failed or removed and why, and their last lines', async () => {
    const h = makeHarness({ routes });
    await runCommand(makeWorkersCommand(h.deps), ['ended', 'ep-1', '--lines', '3']);
    expect(h.err()).toBe('');
    expect(h.out()).toBe(
      [
        'ep-1-crash  ended 2026-11-21 23:31:02 UTC, failed: worker exited with code 3',
        '  last 2 lines:',
        '    loading model from /models/sdxl',
        '    EXIT_ON_START: exiting with code 3',
        '',
        'ep-1-idle  ended 2026-11-21 23:20:00 UTC, removed: stopped to free its GPUs for a worker of endpoint llama',
        '  last 3 lines (older lines were not kept):',
        '    line 2',
        '    line 3',
        '    line 4',
        '',
        'ep-1-quiet  ended 2026-11-21 23:10:00 UTC, removed: scaled down',
        '  (no output)',
        '',
        'Whole output: corral logs ep-1 --worker <id>',
        '',
      ].join('\n'),
    );
    expect(h.requests[0]).toMatchObject({ path: `${PREFIX}endpoint/worker/ended`, query: { id: 'ep-1' } });
    expect(h.requests.slice(1).map((r) => r.query)).toEqual(
      ended.map((w) => ({ id: 'ep-1', worker: w.id, tail: '3' })),
    );
  });

  it('answers as the API does with --json, and reads no output with --lines 0', async () => {
    const json = makeHarness({ routes });
    await runCommand(makeWorkersCommand(json.deps), ['ended', 'ep-1', '--json']);
    expect(JSON.parse(json.out())).toEqual(ended);
    expect(json.requests).toHaveLength(1);
    const none = makeHarness({ routes });
    await runCommand(makeWorkersCommand(none.deps), ['ended', 'ep-1', '--lines', '0']);
    expect(none.requests).toHaveLength(1);
    expect(none.out()).toContain(
      'ep-1-crash  ended 2026-11-21 23:31:02 UTC, failed: worker exited with code 3\n\n',
    );
  });

  it('says when none is kept, and refuses a --lines that is not a count', async () => {
    const h = makeHarness({ routes: { 'GET endpoint/worker/ended': { body: { workers: [] } } } });
    await runCommand(makeWorkersCommand(h.deps), ['ended', 'ep-1']);
    expect(h.out()).toBe('Endpoint ep-1 has no ended workers whose output is kept.\n');
    const bad = makeHarness({ routes });
    await runCommand(makeWorkersCommand(bad.deps), ['ended', 'ep-1', '--lines', 'many']);
    expect(bad.err()).toBe('error: --lines must be a non-negative integer, got "many"\n');
    expect(process.exitCode).toBe(1);
  });
});

describe('corral workers metrics', () => {
  const metrics: WorkerMetrics = {
    id: 'w-1',
    state: 'running',
    healthy: true,
    gpus: ['GPU-aaaa', 'GPU-bbbb'],
    requests: 42,
    inFlight: 1,
    cpuPercent: 153.26,
    memoryBytes: 3 * 1024 ** 3 + 512 * 1024 ** 2,
    startedAt: '2024-05-01T10:00:00.000Z',
    readyAt: '2024-05-01T10:00:12.000Z',
  };

  it('prints the metrics of one worker', async () => {
    const h = makeHarness({ routes: { 'GET endpoint/worker/metrics': { body: metrics } } });
    await runCommand(makeWorkersCommand(h.deps), ['metrics', 'ep-1', 'w-1']);
    expect(h.err()).toBe('');
    expect(h.out()).toBe(
      [
        'ID:         w-1',
        'State:      running',
        'Healthy:    yes',
        'GPUs:       GPU-aaaa, GPU-bbbb',
        'Requests:   42',
        'In flight:  1',
        'CPU:        153.3%',
        'Memory:     3.5 GiB',
        'Started:    2024-05-01T10:00:00.000Z',
        'Ready:      2024-05-01T10:00:12.000Z',
        '',
      ].join('\n'),
    );
    expect(h.requests[0]).toMatchObject({
      method: 'GET',
      path: `${PREFIX}endpoint/worker/metrics`,
      query: { id: 'ep-1', worker: 'w-1' },
    });
  });

  it('shows what the runtime does not know', async () => {
    const pending = {
      ...metrics,
      state: 'pending',
      healthy: false,
      gpus: [],
      cpuPercent: null,
      memoryBytes: null,
    };
    const h = makeHarness({
      routes: { 'GET endpoint/worker/metrics': { body: { ...pending, readyAt: null } } },
    });
    await runCommand(makeWorkersCommand(h.deps), ['metrics', 'ep-1', 'w-1']);
    expect(h.out()).toContain('GPUs:       none\n');
    expect(h.out()).toContain('CPU:        unknown\n');
    expect(h.out()).toContain('Memory:     unknown\n');
    expect(h.out()).toContain('Ready:      not yet\n');
  });

  it('prints the JSON answer with --json', async () => {
    const h = makeHarness({ routes: { 'GET endpoint/worker/metrics': { body: metrics } } });
    await runCommand(makeWorkersCommand(h.deps), ['metrics', 'ep-1', 'w-1', '--json']);
    expect(JSON.parse(h.out())).toEqual(metrics);
  });

  it('reports an unknown worker', async () => {
    const h = makeHarness({
      routes: {
        'GET endpoint/worker/metrics': {
          status: 404,
          body: {
            code: 404,
            reason: 'WORKER_NOT_FOUND',
            message: 'endpoint ep-1 has no worker "w-9"',
            metadata: { workerId: 'w-9' },
          },
        },
      },
    });
    await runCommand(makeWorkersCommand(h.deps), ['metrics', 'ep-1', 'w-9']);
    expect(h.err()).toBe('error: WORKER_NOT_FOUND: endpoint ep-1 has no worker "w-9"\n');
    expect(process.exitCode).toBe(1);
  });
});

describe('formatBytes', () => {
  it.each([
    [0, '0 B'],
    [1023, '1023 B'],
    [1024, '1.0 KiB'],
    [1536 * 1024, '1.5 MiB'],
    [8 * 1024 ** 4, '8.0 TiB'],
    [2048 * 1024 ** 4, '2048.0 TiB'],
  ])('%d bytes is %s', (bytes, text) => {
    expect(formatBytes(bytes)).toBe(text);
  });
});

describe('corral workers drain', () => {
  it('drains a worker, and undrains it with --undrain', async () => {
    const h = makeHarness({ routes: { 'POST endpoint/worker/drain': { body: {} } } });
    await runCommand(makeWorkersCommand(h.deps), ['drain', 'w-1']);
    await runCommand(makeWorkersCommand(h.deps), ['drain', 'w-1', '--undrain']);
    expect(h.err()).toBe('');
    expect(h.out()).toBe(
      [
        'Worker w-1 is draining: it takes no new requests and is replaced.',
        'Worker w-1 is back in service (unless its removal had begun).',
        '',
      ].join('\n'),
    );
    expect(h.requests.map((r) => [r.method, r.path, r.body])).toEqual([
      ['POST', `${PREFIX}endpoint/worker/drain`, { workerID: 'w-1', drain: true }],
      ['POST', `${PREFIX}endpoint/worker/drain`, { workerID: 'w-1', drain: false }],
    ]);
  });

  it('reports an unknown worker and exits 1', async () => {
    const h = makeHarness({
      routes: {
        'POST endpoint/worker/drain': {
          status: 404,
          body: { code: 404, reason: 'WORKER_NOT_FOUND', message: 'you have no worker "w-9"', metadata: {} },
        },
      },
    });
    await runCommand(makeWorkersCommand(h.deps), ['drain', 'w-9']);
    expect(h.err()).toBe('error: WORKER_NOT_FOUND: you have no worker "w-9"\n');
    expect(process.exitCode).toBe(1);
  });
});
