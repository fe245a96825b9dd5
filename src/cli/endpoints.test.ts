import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type CannedAnswer, makeHarness, runCommand } from '../../test/support/cli-harness.js';
import { sampleWireEndpoint } from '../../test/support/wire-fixtures.js';
import { pathFormUrl } from './endpoint-format.js';
import { buildUpdateBody, makeEndpointsCommand } from './endpoints.js';

const PREFIX = '/gpu-instance/openapi/v1/';

afterEach(() => {
  process.exitCode = undefined;
});

function harness(routes: Record<string, CannedAnswer> = {}, extra: Parameters<typeof makeHarness>[0] = {}) {
  return makeHarness({ routes, ...extra });
}

const twoEndpoints = {
  endpoints: [
    sampleWireEndpoint('8000', {
      workers: [
        {
          id: 'w-1',
          state: { state: 'running', error: '', message: '' },
          log: '',
          metrics: '',
          healthy: true,
        },
      ],
    }),
    sampleWireEndpoint('9000', {
      id: 'ep-2',
      name: 'whisper-large',
      state: { state: 'failed', error: 'IMAGE_PULL_FAILED', message: 'manifest unknown' },
      image: { image: 'ghcr.io/acme/whisper:2', authId: 'cred-1', command: '' },
      url: 'http://whisper.localhost:8081',
      workerConfig: { ...sampleWireEndpoint('1').workerConfig, minNum: 1, maxNum: 10 },
      type: 'queue',
      jobUrls: {
        run: 'http://127.0.0.1:8081/v2/ep-2/run',
        runsync: 'http://127.0.0.1:8081/v2/ep-2/runsync',
        status: 'http://127.0.0.1:8081/v2/ep-2/status/{jobId}',
        health: 'http://127.0.0.1:8081/v2/ep-2/health',
      },
    }),
  ],
  total: 2,
};

describe('corral endpoints list', () => {
  it('prints an aligned table', async () => {
    const h = harness({ 'GET endpoints': { body: twoEndpoints } });
    await runCommand(makeEndpointsCommand(h.deps), ['list']);
    expect(h.err()).toBe('');
    expect(process.exitCode).toBeUndefined();
    expect(h.out()).toBe(
      [
        'ID    NAME           TYPE   STATE                       READY  SCALE  IMAGE                   URL',
        'ep-1  echo           http   serving                     1/1    0-2    corral/echo:1           http://echo.localhost:8081',
        'ep-2  whisper-large  queue  failed (IMAGE_PULL_FAILED)  0/0    1-10   ghcr.io/acme/whisper:2  http://127.0.0.1:8081/v2/ep-2/runsync',
        '',
      ].join('\n'),
    );
    expect(h.requests).toHaveLength(1);
    expect(h.requests[0]).toMatchObject({
      method: 'GET',
      path: `${PREFIX}endpoints`,
      query: {},
      authorization: 'Bearer sk_env_key',
    });
  });

  it('prints the raw JSON with --json and passes paging flags', async () => {
    const h = harness({ 'GET endpoints': { body: twoEndpoints } });
    await runCommand(makeEndpointsCommand(h.deps), ['list', '--json', '--page-size', '2', '--page-num', '0']);
    expect(JSON.parse(h.out())).toEqual(twoEndpoints);
    expect(h.requests[0]?.query).toEqual({ pageSize: '2', pageNum: '0' });
  });

  it('says when a page does not hold every endpoint, and when there are none', async () => {
    const partial = harness({ 'GET endpoints': { body: { endpoints: twoEndpoints.endpoints, total: 5 } } });
    await runCommand(makeEndpointsCommand(partial.deps), ['list']);
    expect(partial.out()).toContain('Showing 2 of 5 endpoints.\n');
    const empty = harness({ 'GET endpoints': { body: { endpoints: [], total: 0 } } });
    await runCommand(makeEndpointsCommand(empty.deps), ['list']);
    expect(empty.out()).toBe('No endpoints.\n');
  });

  it('uses --api-url and --api-key over the environment', async () => {
    const h = harness(
      { 'GET endpoints': { body: { endpoints: [], total: 0 } } },
      { env: { CORRAL_API_URL: 'http://env.example:1', CORRAL_API_KEY: 'sk_env' } },
    );
    await runCommand(makeEndpointsCommand(h.deps), [
      'list',
      '--api-url',
      'http://flag.example:2',
      '--api-key',
      'sk_flag',
    ]);
    expect(h.connections).toEqual([{ baseUrl: 'http://flag.example:2', apiKey: 'sk_flag' }]);
    expect(h.requests[0]?.authorization).toBe('Bearer sk_flag');
  });

  it('falls back to CORRAL_API_URL, then the default URL', async () => {
    const fromEnv = harness({}, { env: { CORRAL_API_URL: 'http://env.example:1', CORRAL_API_KEY: 'k' } });
    await runCommand(makeEndpointsCommand(fromEnv.deps), ['list']);
    expect(fromEnv.connections[0]?.baseUrl).toBe('http://env.example:1');
    const byDefault = harness({}, { env: { CORRAL_API_KEY: 'k' } });
    await runCommand(makeEndpointsCommand(byDefault.deps), ['list']);
    expect(byDefault.connections[0]?.baseUrl).toBe('http://127.0.0.1:8080');
  });

  it('fails clearly without an API key and sends nothing', async () => {
    const h = harness({}, { env: { CORRAL_API_KEY: '' } });
    await runCommand(makeEndpointsCommand(h.deps), ['list']);
    expect(h.err()).toBe('error: no API key: pass --api-key or set CORRAL_API_KEY\n');
    expect(process.exitCode).toBe(1);
    expect(h.requests).toEqual([]);
  });
});

describe('pathFormUrl', () => {
  it.each([
    ['http://echo.localhost:8081', 'http://127.0.0.1:8080/x', 'http://127.0.0.1:8081/e/echo/'],
    ['http://echo.localhost', 'http://10.0.0.5:8080/x', 'http://10.0.0.5/e/echo/'],
    ['https://echo.run.example.com', 'http://127.0.0.1:8080/x', undefined],
    ['not a url', 'http://127.0.0.1:8080/x', undefined],
  ])('url %s, API at %s -> %s', (url, log, expected) => {
    expect(pathFormUrl(sampleWireEndpoint(8000, { url, log }))).toBe(expected);
  });
});

describe('corral endpoints get', () => {
  it('prints the endpoint with its workers', async () => {
    const endpoint = sampleWireEndpoint(8000, {
      envs: [{ key: 'MODEL', value: 'tiny' }],
      workers: [
        {
          id: 'w-1',
          state: { state: 'pending', error: '', message: 'waiting for 1 free H100' },
          log: '',
          metrics: '',
          healthy: false,
        },
      ],
    });
    const h = harness({ 'GET endpoint': { body: { endpoint } } });
    await runCommand(makeEndpointsCommand(h.deps), ['get', 'ep-1']);
    expect(h.requests[0]).toMatchObject({ method: 'GET', path: `${PREFIX}endpoint`, query: { id: 'ep-1' } });
    const out = h.out();
    expect(out).toContain('ID:               ep-1\n');
    expect(out).toContain('State:            serving\n');
    expect(out).toContain('Image:            corral/echo:1\n');
    // The path form, for clients that cannot resolve *.localhost, beside the host form.
    expect(out).toContain('URL:              http://echo.localhost:8081\n');
    expect(out).toContain('Path URL:         http://127.0.0.1:8081/e/echo/\n');
    // A request ready to paste, with the key the gateway needs for an endpoint that is not public.
    expect(out).toContain(
      'Call:             curl -H "Authorization: Bearer $CORRAL_API_KEY" http://echo.localhost:8081/\n',
    );
    expect(out).toContain('Port:             8000\n');
    expect(out).toContain('Workers:          0-2 (ready 0/1)\n');
    expect(out).toContain('Environment:\n  KEY    VALUE\n  MODEL  tiny\n');
    expect(out).toContain(
      'Workers:\n  ID   STATE    HEALTHY  MESSAGE\n  w-1  pending  not yet  waiting for 1 free H100\n',
    );
  });

  it('prints the raw {endpoint} answer with --json', async () => {
    const endpoint = sampleWireEndpoint(8000);
    const h = harness({ 'GET endpoint': { body: { endpoint } } });
    await runCommand(makeEndpointsCommand(h.deps), ['get', 'ep-1', '--json']);
    expect(JSON.parse(h.out())).toEqual({ endpoint });
  });

  it('prints an API error as reason and message and sets exit code 1', async () => {
    const h = harness({
      'GET endpoint': {
        status: 404,
        body: {
          code: 404,
          reason: 'ENDPOINT_NOT_FOUND',
          message: 'endpoint ep-9 does not exist',
          metadata: {},
        },
      },
      'GET endpoints': { body: { endpoints: [], total: 0 } },
    });
    await runCommand(makeEndpointsCommand(h.deps), ['get', 'ep-9', '--api-key', 'sk_secret_flag']);
    expect(h.out()).toBe('');
    expect(h.err()).toBe('error: ENDPOINT_NOT_FOUND: no endpoint has the id, appName or name "ep-9"\n');
    expect(process.exitCode).toBe(1);
    expect(h.err()).not.toContain('sk_secret_flag');
  });
});

describe('corral endpoints create', () => {
  let dir: string | undefined;
  afterEach(async () => {
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
    dir = undefined;
  });

  async function specFile(name: string, text: string): Promise<string> {
    dir ??= await mkdtemp(join(tmpdir(), 'corral-cli-'));
    const path = join(dir, name);
    await writeFile(path, text);
    return path;
  }

  it('creates from a YAML file with the fields at top level', async () => {
    const path = await specFile(
      'spec.yaml',
      [
        'name: echo',
        'image:',
        '  image: corral/echo:1',
        'ports:',
        '  - port: 8000',
        'workerConfig:',
        '  minNum: 0',
        '  maxNum: 2',
        'envs:',
        '  - key: MODEL',
        '    value: tiny',
        '',
      ].join('\n'),
    );
    const h = harness({ 'POST endpoint/create': { body: { id: 'ep-new' } } });
    h.deps.readFile = (p) => readFile(p, 'utf8');
    await runCommand(makeEndpointsCommand(h.deps), ['create', '-f', path]);
    expect(h.err()).toBe('');
    expect(h.out()).toBe('created endpoint ep-new\n');
    expect(h.requests[0]).toMatchObject({ method: 'POST', path: `${PREFIX}endpoint/create` });
    expect(h.requests[0]?.body).toEqual({
      endpoint: {
        name: 'echo',
        image: { image: 'corral/echo:1' },
        ports: [{ port: 8000 }],
        workerConfig: { minNum: 0, maxNum: 2 },
        envs: [{ key: 'MODEL', value: 'tiny' }],
      },
    });
  });

  it('accepts a JSON file wrapped in {endpoint} and prints {id} with --json', async () => {
    const path = await specFile(
      'spec.json',
      JSON.stringify({ endpoint: { name: 'x', image: { image: 'a:1' }, ports: [{ port: 80 }] } }),
    );
    const h = harness({ 'POST endpoint/create': { body: { id: 'ep-new' } } });
    h.deps.readFile = (p) => readFile(p, 'utf8');
    await runCommand(makeEndpointsCommand(h.deps), ['create', '--file', path, '--json']);
    expect(JSON.parse(h.out())).toEqual({ id: 'ep-new' });
    expect(h.requests[0]?.body).toEqual({
      endpoint: { name: 'x', image: { image: 'a:1' }, ports: [{ port: 80 }] },
    });
  });

  it('reads the spec from stdin with -f -', async () => {
    const h = harness(
      { 'POST endpoint/create': { body: { id: 'ep-new' } } },
      { stdin: 'name: piped\nimage: {image: a:1}\nports: [{port: 80}]\n' },
    );
    await runCommand(makeEndpointsCommand(h.deps), ['create', '-f', '-']);
    expect(h.requests[0]?.body).toEqual({
      endpoint: { name: 'piped', image: { image: 'a:1' }, ports: [{ port: 80 }] },
    });
  });

  it('reports a validation error with its field', async () => {
    const h = harness(
      {
        'POST endpoint/create': {
          status: 400,
          body: {
            code: 400,
            reason: 'OUT_OF_RANGE',
            message: 'maxNum must be at most 10',
            metadata: { field: 'workerConfig.maxNum' },
          },
        },
      },
      { files: { 'spec.yaml': 'image: {image: a:1}\nports: [{port: 80}]\nworkerConfig: {maxNum: 99}\n' } },
    );
    await runCommand(makeEndpointsCommand(h.deps), ['create', '-f', 'spec.yaml']);
    expect(h.err()).toBe('error: OUT_OF_RANGE: maxNum must be at most 10 (field: workerConfig.maxNum)\n');
    expect(process.exitCode).toBe(1);
  });

  it('rejects unreadable, unparsable or non-mapping files before calling the API', async () => {
    const cases: [string, string | undefined, RegExp][] = [
      ['missing.yaml', undefined, /^error: cannot read missing\.yaml: ENOENT/],
      ['bad.yaml', 'name: [unclosed\n', /^error: cannot parse bad\.yaml: /],
      ['list.yaml', '- a\n- b\n', /^error: list\.yaml must hold a mapping of endpoint fields/],
    ];
    for (const [name, text, expected] of cases) {
      const h = harness({}, { files: text === undefined ? {} : { [name]: text } });
      await runCommand(makeEndpointsCommand(h.deps), ['create', '-f', name]);
      expect(h.err()).toMatch(expected);
      expect(h.requests).toEqual([]);
      expect(process.exitCode).toBe(1);
      process.exitCode = undefined;
    }
  });

  it('requires -f', async () => {
    const h = harness();
    await expect(runCommand(makeEndpointsCommand(h.deps), ['create'])).rejects.toThrow(/--file/);
    expect(h.err()).toContain("required option '-f, --file <path>' not specified");
  });
});

describe('corral endpoints update', () => {
  const updated = {
    body: { endpoint: sampleWireEndpoint(8000, { state: { state: 'updating', error: '', message: '' } }) },
  };

  it('builds a flat body from the flags', async () => {
    const h = harness({ 'POST endpoint/update': updated });
    await runCommand(makeEndpointsCommand(h.deps), [
      'update',
      'ep-1',
      '--min-workers',
      '1',
      '--max-workers',
      '4',
      '--image',
      'corral/echo:2',
      '--name',
      'echo-2',
    ]);
    expect(h.err()).toBe('');
    expect(h.out()).toBe('updated endpoint ep-1 (state updating)\n');
    const json = harness({ 'POST endpoint/update': updated });
    await runCommand(makeEndpointsCommand(json.deps), ['update', 'ep-1', '--name', 'x', '--json']);
    expect(JSON.parse(json.out())).toEqual(updated.body);
    expect(h.requests[0]).toMatchObject({ method: 'POST', path: `${PREFIX}endpoint/update` });
    expect(h.requests[0]?.body).toEqual({
      id: 'ep-1',
      workerConfig: { minNum: 1, maxNum: 4 },
      image: { image: 'corral/echo:2' },
      name: 'echo-2',
    });
  });

  it('lays flags over the file fields and keeps the positional id', async () => {
    const h = harness(
      { 'POST endpoint/update': updated },
      {
        files: {
          'patch.yaml': 'workerConfig: [{maxNum: 3, gpuNum: 2}]\nimage: {image: a:1, authId: cred-1}\n',
        },
      },
    );
    await runCommand(makeEndpointsCommand(h.deps), [
      'update',
      'ep-1',
      '-f',
      'patch.yaml',
      '--max-workers',
      '5',
    ]);
    expect(h.requests[0]?.body).toEqual({
      id: 'ep-1',
      workerConfig: { maxNum: 5, gpuNum: 2 },
      image: { image: 'a:1', authId: 'cred-1' },
    });
  });

  it('refuses bad numbers, min above max and an empty update without calling the API', async () => {
    const cases: [string[], string][] = [
      [['--min-workers', 'two'], 'error: --min-workers must be a non-negative integer, got "two"\n'],
      [['--min-workers', '-1'], 'error: --min-workers must be a non-negative integer, got "-1"\n'],
      [
        ['--min-workers', '3', '--max-workers', '2'],
        'error: --min-workers (3) is greater than --max-workers (2)\n',
      ],
      [
        [],
        'error: nothing to update: pass -f <file> or at least one of --min-workers, --max-workers, --image, --name\n',
      ],
    ];
    for (const [flags, expected] of cases) {
      const h = harness({ 'POST endpoint/update': updated });
      await runCommand(makeEndpointsCommand(h.deps), ['update', 'ep-1', ...flags]);
      expect(h.err()).toBe(expected);
      expect(h.requests).toEqual([]);
      expect(process.exitCode).toBe(1);
      process.exitCode = undefined;
    }
  });

  it('buildUpdateBody leaves the file fields it does not touch alone', () => {
    const base = { envs: [{ key: 'A', value: '1' }], workerConfig: { gpuNum: 1 } };
    expect(buildUpdateBody(base, { minWorkers: '0' })).toEqual({
      envs: [{ key: 'A', value: '1' }],
      workerConfig: { gpuNum: 1, minNum: 0 },
    });
    expect(base.workerConfig).toEqual({ gpuNum: 1 });
  });
});

describe('corral endpoints delete|stop|start|log', () => {
  it.each([
    ['delete', 'deleted'],
    ['stop', 'stopped'],
    ['start', 'started'],
  ])('%s posts {id}', async (verb, done) => {
    const h = harness({ [`POST endpoint/${verb}`]: { body: {} } });
    await runCommand(makeEndpointsCommand(h.deps), [verb, 'ep-1']);
    expect(h.out()).toBe(`${done} endpoint ep-1\n`);
    expect(h.requests[0]).toMatchObject({
      method: 'POST',
      path: `${PREFIX}endpoint/${verb}`,
      body: { id: 'ep-1' },
    });
  });

  it('log prints events and passes the cursor', async () => {
    const page = {
      events: [
        { at: '2025-01-01T00:00:00.000Z', type: 'created', message: 'endpoint created', data: {} },
        {
          at: '2025-01-01T00:00:05.000Z',
          type: 'worker.failed',
          message: 'pull failed',
          data: { worker: 'w-1' },
        },
      ],
      next: 12,
    };
    const h = harness({ 'GET endpoint/log': { body: page } });
    await runCommand(makeEndpointsCommand(h.deps), ['log', 'ep-1', '--after', '10', '--limit', '2']);
    expect(h.requests[0]?.query).toEqual({ id: 'ep-1', after: '10', limit: '2' });
    expect(h.out()).toBe(
      [
        'TIME                      TYPE           MESSAGE',
        '2025-01-01T00:00:00.000Z  created        endpoint created',
        '2025-01-01T00:00:05.000Z  worker.failed  pull failed',
        '',
      ].join('\n'),
    );
    const json = harness({ 'GET endpoint/log': { body: page } });
    await runCommand(makeEndpointsCommand(json.deps), ['log', 'ep-1', '--json']);
    expect(JSON.parse(json.out())).toEqual(page);
  });

  it('prints a connection failure naming the URL', async () => {
    const h = harness({ 'POST endpoint/stop': { refuse: true, body: null } });
    await runCommand(makeEndpointsCommand(h.deps), ['stop', 'ep-1', '--api-url', 'http://127.0.0.1:9']);
    expect(h.err()).toBe(
      'error: cannot reach the Corral API at http://127.0.0.1:9 (POST /gpu-instance/openapi/v1/endpoint/stop): ' +
        'connect ECONNREFUSED 127.0.0.1:9\n',
    );
    expect(process.exitCode).toBe(1);
  });
});

describe('corral endpoints metrics', () => {
  const metrics = {
    id: 'ep-1',
    workers: { running: 2, starting: 1, failed: 1 },
    readyWorkers: 2,
    window: { since: '2026-11-25T10:00:00.000Z', seconds: 300, replica: null },
    requests: { total: 12, byStatus: { '200': 11, '504': 1 } },
    latencyMs: { p50: 4.25, p99: 480, mean: 23.04 },
    queueWaitMs: { p50: 0.5, p99: 250, mean: 10 },
    queueDepth: 3,
    inFlight: 4,
    coldStarts: { count: 1, meanMs: 1832.46 },
  };

  it('prints workers by state and the traffic, or --json as the API answers', async () => {
    const h = harness({ 'GET endpoint/metrics': { body: metrics } });
    await runCommand(makeEndpointsCommand(h.deps), ['metrics', 'ep-1']);
    expect(h.requests[0]).toMatchObject({
      method: 'GET',
      path: `${PREFIX}endpoint/metrics`,
      query: { id: 'ep-1' },
    });
    expect(h.out()).toBe(
      [
        'ID:           ep-1',
        'Workers:      2 ready (2 running, 1 starting, 1 failed)',
        "Window:       since 2026-11-25 10:00:00 UTC (5 min), this server's gateway",
        'Requests:     12 (11 x 200, 1 x 504)',
        'Latency:      p50 4.3 ms, p99 480 ms, mean 23 ms',
        'Queue wait:   p50 0.5 ms, p99 250 ms, mean 10 ms',
        'Queued now:   3',
        'In flight:    4',
        'Cold starts:  1 (mean 1832.5 ms)',
        '',
      ].join('\n'),
    );
    const json = harness({ 'GET endpoint/metrics': { body: metrics } });
    await runCommand(makeEndpointsCommand(json.deps), ['metrics', 'ep-1', '--json']);
    expect(JSON.parse(json.out())).toEqual(metrics);
  });

  it('shows thaws and restores apart from cold starts, each with its own mean', async () => {
    const tiers = {
      ...metrics,
      coldStarts: { count: 1, meanMs: 3289 },
      thaws: { count: 1, meanMs: 24 },
      restores: { count: 0, meanMs: null },
    };
    const h = harness({ 'GET endpoint/metrics': { body: tiers } });
    await runCommand(makeEndpointsCommand(h.deps), ['metrics', 'ep-1']);
    expect(h.out()).toContain('Cold starts:  1 (mean 3289 ms)\nThaws:        1 (mean 24 ms)\n');
    expect(h.out()).not.toContain('Restores');
    // A server before `thaws` counted every wake in coldStarts, and had them apart in `wakes`.
    const older = {
      ...metrics,
      coldStarts: { count: 2, meanMs: 1656.5 },
      wakes: {
        thaw: { count: 1, meanMs: 24 },
        restore: { count: 0, meanMs: null },
        cold: { count: 1, meanMs: 3289 },
      },
    };
    const o = harness({ 'GET endpoint/metrics': { body: older } });
    await runCommand(makeEndpointsCommand(o.deps), ['metrics', 'ep-1']);
    expect(o.out()).toContain('Cold starts:  1 (mean 3289 ms)\nThaws:        1 (mean 24 ms)\n');
  });

  it("shows the ledger's GPU time of the last hour and day, by state, with its price", async () => {
    const zero = { downloading: 0, starting: 0, active: 0, idle: 0, frozen: 0, suspended: 0 };
    const usage = {
      lastHour: {
        gpuSeconds: { ...zero, active: 3600, idle: 1800 },
        timeBilledMs: 2_700_000,
        amount: 4.5,
        currency: 'EUR',
      },
      lastDay: { gpuSeconds: zero, timeBilledMs: 0, amount: 0, currency: 'EUR' },
    };
    const h = harness({ 'GET endpoint/metrics': { body: { ...metrics, usage } } });
    await runCommand(makeEndpointsCommand(h.deps), ['metrics', 'ep-1']);
    expect(h.out()).toContain(
      [
        'GPU time, last hour:  1.500 GPU-h (4.50 EUR; active 1.000, idle 0.500)',
        'GPU time, last day:   0.000 GPU-h (0.00 EUR)',
        'Window:',
      ].join('\n'),
    );
  });

  it('names the answering replica whose gateway the totals are, with several replicas', async () => {
    const replicated = { ...metrics, window: { ...metrics.window, replica: 'rep-a1' } };
    const h = harness({ 'GET endpoint/metrics': { body: replicated } });
    await runCommand(makeEndpointsCommand(h.deps), ['metrics', 'ep-1']);
    expect(h.out()).toContain(
      "Window:       since 2026-11-25 10:00:00 UTC (5 min), replica rep-a1's gateway (queued and in flight now: every replica's)\n",
    );
  });

  it('says when the answering server runs no gateway', async () => {
    const bare = {
      id: 'ep-1',
      workers: {},
      readyWorkers: 0,
      window: null,
      requests: null,
      latencyMs: null,
      queueWaitMs: null,
      queueDepth: null,
      inFlight: null,
      coldStarts: null,
    };
    const h = harness({ 'GET endpoint/metrics': { body: bare } });
    await runCommand(makeEndpointsCommand(h.deps), ['metrics', 'ep-1']);
    expect(h.out()).toBe(
      [
        'ID:       ep-1',
        'Workers:  none',
        'Traffic:  unknown (no gateway runs in the server that answered)',
        '',
      ].join('\n'),
    );
  });
});
