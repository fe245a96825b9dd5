import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createTestApi } from '../../test/support/api.js';
import { MemoryModelCache } from '../../test/support/memory-model-cache.js';
import { servedOperations } from '../../test/support/routes.js';
import { storeTargets } from '../../test/support/stores.js';
import { SERVE_SETTINGS } from '../config/settings.js';
import { WIRE_LIMIT_FIELDS } from '../contract/limits.js';
import { API_PREFIX } from '../contract/paths.js';
import { ENDPOINT_EVENT_TYPES } from '../domain/records.js';

const read = (name: string) => readFileSync(new URL(`../../docs/${name}`, import.meta.url), 'utf8');
const apiDoc = read('api.md');
const configurationDoc = read('configuration.md');

/** Rows of markdown tables whose first cell is a backticked name: name -> the other cells (first row wins). */
function tableRows(markdown: string, firstCell: RegExp): Map<string, string[]> {
  const rows = new Map<string, string[]>();
  for (const line of markdown.split('\n')) {
    const cells = line.split('|').map((cell) => cell.trim());
    const name = firstCell.exec(cells[1] ?? '')?.[1];
    if (line.startsWith('| `') && name !== undefined && !rows.has(name)) rows.set(name, cells.slice(2, -1));
  }
  return rows;
}

/** The text of a markdown section, from its heading to the next heading of any level. */
function section(markdown: string, heading: string): string {
  const start = markdown.indexOf(`\n${heading}\n`);
  if (start < 0) throw new Error(`no section "${heading}"`);
  const body = markdown.slice(start + heading.length + 2);
  const end = body.search(/^#{1,6} /m);
  return end < 0 ? body : body.slice(0, end);
}

/**
 * `METHOD path` of every operation in the operations table (first cells such as `` `GET endpoints` `` or
 * `` `GET /healthz`, `GET /metrics` ``): paths without a leading slash are relative to the API prefix.
 */
function documentedOperations(markdown: string): string[] {
  const table = section(markdown, '## Operations');
  return (
    table
      .split('\n')
      .filter((line) => line.startsWith('| `'))
      .flatMap((line) => [...(line.split('|')[1] ?? '').matchAll(/`(GET|POST|PUT|PATCH|DELETE) (\S+)`/g)])
      .map(([, method, path = '']) => `${method} ${path.startsWith('/') ? path : `${API_PREFIX}/${path}`}`)
      // A path parameter as the router spells it: `{org}` is `:org`.
      .map((operation) => operation.replace(/\{(\w+)\}/g, ':$1'))
  );
}

describe('docs/api.md', () => {
  it('describes every event type of the endpoint log, and no other', () => {
    const events = tableRows(section(apiDoc, "### Read an endpoint's events"), /^`([a-z-]+)`$/);
    expect([...events.keys()].sort()).toEqual([...ENDPOINT_EVENT_TYPES].sort());
  });

  it('documents every field of the limits record', () => {
    const missing = [...Object.keys(WIRE_LIMIT_FIELDS), 'cudaVersionList'].filter(
      (field) => !apiDoc.includes(`"${field}"`),
    );
    expect(missing).toEqual([]);
  });
});

describe("docs/api.md's operations table", () => {
  it('lists exactly the routes the server serves', async () => {
    const target = storeTargets()[0];
    if (!target) throw new Error('no store target');
    const { store, dispose } = await target.open();
    // With a model cache: the routes that pull into it and remove from it are served then.
    const cache = new MemoryModelCache({ hubDir: '/cache/hub', models: [] });
    const api = await createTestApi(store, {
      modelCache: cache,
      models: { cache, users: async () => new Map() },
    });
    try {
      await api.app.ready();
      const served = servedOperations(api.app).sort();
      expect(served.length).toBeGreaterThanOrEqual(18);
      expect(documentedOperations(apiDoc).sort()).toEqual(served);
    } finally {
      await api.app.close();
      await dispose();
    }
  });
});

describe('docs/configuration.md', () => {
  const flagRows = tableRows(configurationDoc, /^`(--[a-z-]+)`$/);

  it('documents every corral serve flag with its environment variable and default', () => {
    for (const setting of Object.values(SERVE_SETTINGS)) {
      const cells = flagRows.get(setting.flag);
      expect(cells, `no table row for ${setting.flag}`).toBeDefined();
      expect(cells?.[0], setting.flag).toBe(`\`${setting.env}\``);
      // An empty default (a list of nothing) is written `(none)`, as the flags without a default are.
      const shown = setting.default === '' ? '(none)' : `\`${setting.default}\``;
      if (setting.default !== undefined) expect(cells?.[1], setting.flag).toBe(shown);
    }
    expect([...flagRows.keys()].sort()).toEqual(
      Object.values(SERVE_SETTINGS)
        .map((s) => s.flag)
        .sort(),
    );
  });

  it('names every flag and environment variable', () => {
    const names = Object.values(SERVE_SETTINGS).flatMap((s) => [s.flag, s.env]);
    expect(names.filter((name) => !configurationDoc.includes(name))).toEqual([]);
    for (const secret of ['CORRAL_API_KEY', 'CORRAL_SECRET_KEY']) expect(configurationDoc).toContain(secret);
  });

  it('shows every limit in the config file example', () => {
    const missing = Object.keys(WIRE_LIMIT_FIELDS).filter(
      (field) => !configurationDoc.includes(`  ${field}:`),
    );
    expect(missing).toEqual([]);
  });
});
