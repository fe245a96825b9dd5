import { describe, expect, it } from 'vitest';
import type { WireCachedModel } from '../../src/client/index.js';
import {
  DOWNLOAD_POLL_MS,
  downloadView,
  EMPTY_PULL_FORM,
  modelRows,
  nextReadMs,
  pullBody,
  pullErrorField,
  showsMachines,
} from './models-view.js';

const NOW = Date.parse('2026-11-29T12:00:00.000Z');

const model = (over: Partial<WireCachedModel> = {}): WireCachedModel => ({
  name: 'acme/tiny-llm',
  machine: null,
  revision: 'main',
  commit: '0123456789abcdef0123456789abcdef01234567',
  files: 4,
  bytes: 14_900_000_000,
  diskBytes: 15_200_000_000,
  lastUsedAt: '2026-11-29T11:57:00.000Z',
  endpoints: [{ endpointId: 'ep-1', endpointName: 'chat' }],
  download: null,
  ...over,
});

describe('a cached model’s row', () => {
  it('says its sizes in decimal units, its commit short, its last use as a time ago, and the endpoints naming it', () => {
    expect(modelRows([model()], NOW)).toEqual([
      {
        key: 'acme/tiny-llm@main',
        machine: null,
        name: 'acme/tiny-llm',
        revision: 'main',
        commitShort: '0123456789ab',
        files: 4,
        size: '15 GB',
        disk: '15 GB',
        lastUse: '3 min ago',
        endpoints: [{ endpointId: 'ep-1', endpointName: 'chat' }],
        download: null,
      },
    ]);
    expect(modelRows([model({ bytes: 812, diskBytes: 3_200_000 })], NOW)[0]).toMatchObject({
      size: '812 B',
      disk: '3.2 MB',
    });
  });

  it('keeps two revisions of one repository apart', () => {
    const keys = modelRows([model(), model({ revision: 'refs/pr/1' })], NOW).map((r) => r.key);
    expect(keys).toEqual(['acme/tiny-llm@main', 'acme/tiny-llm@refs/pr/1']);
  });

  it('keeps the copies of GPU nodes apart and shows the Machine column only when a node is listed', () => {
    const rows = modelRows([model(), model({ machine: 'gpu-a' }), model({ machine: 'gpu-b' })], NOW);
    expect(rows.map((r) => [r.key, r.machine])).toEqual([
      ['acme/tiny-llm@main', null],
      ['acme/tiny-llm@main on gpu-a', 'gpu-a'],
      ['acme/tiny-llm@main on gpu-b', 'gpu-b'],
    ]);
    expect(showsMachines(rows)).toBe(true);
    expect(showsMachines(modelRows([model()], NOW))).toBe(false);
  });
});

describe('a download in flight', () => {
  it('says its share, bytes, rate and time left as the worker’s downloading message does', () => {
    expect(
      downloadView({ bytesDone: 3_200_000_000, bytesTotal: 14_900_000_000, bytesPerSecond: 410_000_000 }),
    ).toEqual({ percent: 21, bytes: '3.2 GB of 15 GB', rate: '410 MB/s', left: 'about 29 s left' });
  });

  it('promises no time before a rate is known, and never passes 100 %', () => {
    expect(downloadView({ bytesDone: 0, bytesTotal: 0, bytesPerSecond: 0 })).toEqual({
      percent: 0,
      bytes: '0 B of 0 B',
      rate: '-',
      left: '',
    });
    expect(downloadView({ bytesDone: 11, bytesTotal: 10, bytesPerSecond: 5 }).percent).toBe(100);
  });
});

describe('when the page reads again', () => {
  it('every second while a model downloads, and not at all once none does', () => {
    const busy = model({ download: { bytesDone: 1, bytesTotal: 2, bytesPerSecond: 1 } });
    expect(nextReadMs({ scope: 'own', models: [model(), busy] })).toBe(DOWNLOAD_POLL_MS);
    expect(nextReadMs({ scope: 'own', models: [model()] })).toBeNull();
    expect(nextReadMs({ scope: 'all', models: [] })).toBeNull();
    expect(nextReadMs(undefined)).toBeNull();
  });
});

describe('the Pull form', () => {
  it('sends main for an empty revision, the patterns split, and no token secret when none is chosen', () => {
    expect(pullBody({ ...EMPTY_PULL_FORM, name: ' acme/tiny-llm ', revision: '' })).toEqual({
      name: 'acme/tiny-llm',
      revision: 'main',
      allowPatterns: [],
    });
    expect(
      pullBody({
        name: 'acme/gated-llm',
        revision: 'refs/pr/1',
        allowPatterns: '*.safetensors, *.json\nconfig/*',
        tokenSecret: 'hf-token',
      }),
    ).toEqual({
      name: 'acme/gated-llm',
      revision: 'refs/pr/1',
      allowPatterns: ['*.safetensors', '*.json', 'config/*'],
      tokenSecret: 'hf-token',
    });
  });

  it('shows a refusal beside the field it names, else beside the field its reason points at, else above', () => {
    expect(pullErrorField({ reason: 'INVALID_ARGUMENT', field: 'revision' })).toBe('revision');
    expect(pullErrorField({ reason: 'INVALID_ARGUMENT', field: 'models.0.allowPatterns.1' })).toBe(
      'allowPatterns',
    );
    expect(pullErrorField({ reason: 'UNKNOWN_SECRET', field: undefined })).toBe('tokenSecret');
    expect(pullErrorField({ reason: 'MODEL_GATED', field: undefined })).toBe('tokenSecret');
    expect(pullErrorField({ reason: 'MODEL_UNAUTHORIZED', field: undefined })).toBe('tokenSecret');
    expect(pullErrorField({ reason: 'MODEL_NOT_FOUND', field: undefined })).toBe('name');
    expect(pullErrorField({ reason: 'MODEL_HUB_UNREACHABLE', field: undefined })).toBeUndefined();
  });
});
