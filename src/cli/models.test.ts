import { afterEach, describe, expect, it } from 'vitest';
import { makeHarness, runCommand } from '../../test/support/cli-harness.js';
import type { WireCachedModel, WireModels } from '../client/index.js';
import { makeModelsCommand } from './models.js';

afterEach(() => {
  process.exitCode = undefined;
});

const answer: WireModels = {
  scope: 'all',
  models: [
    {
      name: 'meta-llama/Llama-3.1-8B',
      machine: null,
      revision: 'main',
      commit: 'd04e592bb4f6aa9cfee91e2e20afa771667e1d4b',
      files: 7,
      bytes: 16_060_000_000,
      diskBytes: 16_060_000_000,
      lastUsedAt: '2026-11-29T13:30:05.000Z',
      endpoints: [
        { endpointId: 'ep-1', endpointName: 'llm' },
        { endpointId: 'ep-2', endpointName: 'llm-canary' },
      ],
      download: null,
    },
    {
      name: 'org/new',
      machine: null,
      revision: 'refs/pr/1',
      commit: '0123456789abcdef0123456789abcdef01234567',
      files: 3,
      bytes: 3_200_000_000,
      diskBytes: 3_200_000_000,
      lastUsedAt: '2026-11-29T13:31:00.000Z',
      endpoints: [],
      download: { bytesDone: 1_100_000_000, bytesTotal: 14_900_000_000, bytesPerSecond: 410_000_000 },
    },
  ],
};

describe('corral models list', () => {
  it('prints each cached model with its size (or its download), last use and the endpoints naming it', async () => {
    const h = makeHarness({ routes: { 'GET models': { body: answer } } });
    await runCommand(makeModelsCommand(h.deps), ['list']);
    expect(h.err()).toBe('');
    expect(h.out()).toBe(
      [
        'MODEL                    REVISION   COMMIT                     SIZE  LAST USED            ENDPOINTS',
        'meta-llama/Llama-3.1-8B  main       d04e592bb4f6            16.1 GB  2026-11-29 13:30:05  llm, llm-canary',
        'org/new                  refs/pr/1  0123456789ab  1.1 GB of 14.9 GB  2026-11-29 13:31:00  -',
        '',
      ].join('\n'),
    );
  });

  it("adds a MACHINE column where GPU nodes' caches are listed, the server's own cache named as such", async () => {
    const [llama] = answer.models;
    if (!llama) throw new Error('no model');
    const nodes: WireModels = {
      scope: 'all',
      models: [llama, { ...llama, machine: 'gpu-a' }, { ...llama, machine: 'gpu-b', endpoints: [] }],
    };
    const h = makeHarness({ routes: { 'GET models': { body: nodes } } });
    await runCommand(makeModelsCommand(h.deps), ['list']);
    expect(h.out()).toBe(
      [
        'MACHINE   MODEL                    REVISION  COMMIT           SIZE  LAST USED            ENDPOINTS',
        '(server)  meta-llama/Llama-3.1-8B  main      d04e592bb4f6  16.1 GB  2026-11-29 13:30:05  llm, llm-canary',
        'gpu-a     meta-llama/Llama-3.1-8B  main      d04e592bb4f6  16.1 GB  2026-11-29 13:30:05  llm, llm-canary',
        'gpu-b     meta-llama/Llama-3.1-8B  main      d04e592bb4f6  16.1 GB  2026-11-29 13:30:05  -',
        '',
      ].join('\n'),
    );
  });

  it('prints the answer with --json', async () => {
    const h = makeHarness({ routes: { 'GET models': { body: answer } } });
    await runCommand(makeModelsCommand(h.deps), ['list', '--json']);
    expect(JSON.parse(h.out())).toEqual(answer);
  });
});

const pulled = (download: WireCachedModel['download']): WireCachedModel => ({
  name: 'org/new',
  machine: null,
  revision: 'main',
  commit: '0123456789abcdef0123456789abcdef01234567',
  files: 3,
  bytes: 14_900_000_000,
  diskBytes: download?.bytesDone ?? 14_900_000_000,
  lastUsedAt: '2026-11-29T13:31:00.000Z',
  endpoints: [],
  download,
});

/** `GET models` answering each model in turn, the last one from then on. */
function listings(...models: WireCachedModel[]) {
  let call = 0;
  return {
    respond: () => {
      const model = models[Math.min(call++, models.length - 1)];
      return Response.json({ scope: 'own', models: model ? [model] : [] });
    },
  };
}

const downloading = (gb: number) =>
  pulled({ bytesDone: gb * 1e9, bytesTotal: 14_900_000_000, bytesPerSecond: 410_000_000 });

describe('corral models pull', () => {
  it('sends the model with its patterns and token secret, then prints a progress line every 10 s until it is cached', async () => {
    const h = makeHarness({
      routes: {
        'POST models': { status: 202, body: downloading(0) },
        // 12 polls a second apart downloading, then cached.
        'GET models': listings(...Array.from({ length: 12 }, (_, n) => downloading(n + 1)), pulled(null)),
      },
    });
    await runCommand(makeModelsCommand(h.deps), [
      'pull',
      'org/new',
      '--allow',
      '*.safetensors',
      '--allow',
      '*.json',
      '--token-secret',
      'hf-token',
    ]);
    expect(h.requests[0]?.body).toEqual({
      name: 'org/new',
      allowPatterns: ['*.safetensors', '*.json'],
      tokenSecret: 'hf-token',
    });
    expect(h.err()).toBe(
      [
        'model org/new: 0.0 of 14.9 GB, 410 MB/s, about 37 s left',
        'model org/new: 10.0 of 14.9 GB, 410 MB/s, about 12 s left',
        '',
      ].join('\n'),
    );
    expect(h.out()).toBe('model org/new is cached: main (0123456789ab), 3 files, 14.9 GB\n');
    expect(process.exitCode).toBeUndefined();
  });

  it('redraws one line on a terminal', async () => {
    const h = makeHarness({
      terminal: { stdout: true, stderr: true },
      routes: {
        'POST models': { status: 202, body: downloading(0) },
        'GET models': listings(downloading(3.2), pulled(null)),
      },
    });
    await runCommand(makeModelsCommand(h.deps), ['pull', 'org/new', '--revision', 'main']);
    expect(h.err()).toBe(
      '\r\x1b[Kmodel org/new: 0.0 of 14.9 GB, 410 MB/s, about 37 s left' +
        '\r\x1b[Kmodel org/new: 3.2 of 14.9 GB, 410 MB/s, about 29 s left\n',
    );
    expect(h.out()).toContain('is cached');
  });

  it('returns once the download has begun with --no-wait, and at once when the model was cached', async () => {
    const begun = makeHarness({ routes: { 'POST models': { status: 202, body: downloading(1.1) } } });
    await runCommand(makeModelsCommand(begun.deps), ['pull', 'org/new', '--no-wait']);
    expect(begun.requests.map((request) => request.method)).toEqual(['POST']);
    expect(begun.out()).toBe(
      'model org/new: 1.1 of 14.9 GB, 410 MB/s, about 34 s left (downloading: corral models list follows it)\n',
    );
    const cached = makeHarness({ routes: { 'POST models': { body: pulled(null) } } });
    await runCommand(makeModelsCommand(cached.deps), ['pull', 'org/new']);
    expect(cached.requests).toHaveLength(1);
    expect(cached.out()).toContain('model org/new is cached');
  });

  it('fails when the model leaves the listing before its download ended', async () => {
    const h = makeHarness({
      routes: {
        'POST models': { status: 202, body: downloading(0) },
        'GET models': { body: { scope: 'own', models: [] } },
      },
    });
    await runCommand(makeModelsCommand(h.deps), ['pull', 'org/new']);
    expect(process.exitCode).toBe(1);
    expect(h.err()).toContain('the download of org/new ended without it in the cache');
  });

  it('says the refusal of the hub', async () => {
    const h = makeHarness({
      routes: {
        'POST models': {
          status: 400,
          body: { code: 400, reason: 'MODEL_GATED', message: 'model org/gated: gated', metadata: {} },
        },
      },
    });
    await runCommand(makeModelsCommand(h.deps), ['pull', 'org/gated']);
    expect(process.exitCode).toBe(1);
    expect(h.err()).toContain('model org/gated: gated');
  });
});

describe('corral models rm', () => {
  it('removes one revision, or says why not', async () => {
    const h = makeHarness({
      routes: {
        'DELETE models/org/new': { status: 204, respond: () => new Response(null, { status: 204 }) },
      },
    });
    await runCommand(makeModelsCommand(h.deps), ['rm', 'org/new', '--revision', 'refs/pr/1']);
    expect(h.requests[0]).toMatchObject({ method: 'DELETE', query: { revision: 'refs/pr/1' } });
    expect(h.out()).toBe('removed model org/new at refs/pr/1\n');

    const inUse = makeHarness({
      routes: {
        'DELETE models/org/new': {
          status: 409,
          body: { code: 409, reason: 'MODEL_IN_USE', message: 'model org/new is named by llm', metadata: {} },
        },
      },
    });
    await runCommand(makeModelsCommand(inUse.deps), ['rm', 'org/new']);
    expect(process.exitCode).toBe(1);
    expect(inUse.err()).toContain('model org/new is named by llm');
  });
});
