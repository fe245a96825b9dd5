import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SERVE_SETTINGS } from '../config/settings.js';
import { WIRE_LIMIT_FIELDS } from '../contract/limits.js';
import { ERROR_CATALOGUE } from './errors.js';

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

describe('docs/api.md', () => {
  const errorRows = tableRows(apiDoc, /^`([A-Z][A-Z_]+)`$/);
  const statusRows = [...errorRows].filter(([, cells]) => /^\d{3}$/.test(cells[0] ?? ''));

  it('names every error reason of the catalogue', () => {
    const missing = Object.keys(ERROR_CATALOGUE).filter((reason) => !apiDoc.includes(`\`${reason}\``));
    expect(missing).toEqual([]);
  });

  it('has a table row for every reason, with its status', () => {
    const documented = Object.fromEntries(statusRows.map(([reason, cells]) => [reason, Number(cells[0])]));
    const catalogue = Object.fromEntries(
      Object.entries(ERROR_CATALOGUE).map(([reason, entry]) => [reason, entry.status]),
    );
    expect(documented).toEqual(catalogue);
  });

  it('documents every field of the limits record', () => {
    const missing = [...Object.keys(WIRE_LIMIT_FIELDS), 'cudaVersionList'].filter(
      (field) => !apiDoc.includes(`"${field}"`),
    );
    expect(missing).toEqual([]);
  });
});

describe('docs/configuration.md', () => {
  const flagRows = tableRows(configurationDoc, /^`(--[a-z-]+)`$/);

  it('documents every corral serve flag with its environment variable and default', () => {
    for (const setting of Object.values(SERVE_SETTINGS)) {
      const cells = flagRows.get(setting.flag);
      expect(cells, `no table row for ${setting.flag}`).toBeDefined();
      expect(cells?.[0], setting.flag).toBe(`\`${setting.env}\``);
      if (setting.default !== undefined) expect(cells?.[1], setting.flag).toBe(`\`${setting.default}\``);
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
