import { afterEach, describe, expect, it } from 'vitest';
import { makeHarness, runCommand } from '../../test/support/cli-harness.js';
import type { WireModels } from '../client/index.js';
import { makeModelsCommand } from './models.js';

afterEach(() => {
  process.exitCode = undefined;
});

const answer: WireModels = {
  scope: 'all',
  models: [
    {
      name: 'meta-llama/Llama-3.1-8B',
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

  it('prints the answer with --json', async () => {
    const h = makeHarness({ routes: { 'GET models': { body: answer } } });
    await runCommand(makeModelsCommand(h.deps), ['list', '--json']);
    expect(JSON.parse(h.out())).toEqual(answer);
  });
});
