import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { API_ERROR_CATALOGUE } from './api-catalogue.js';
import type { CatalogueEntry } from './corral-error.js';
import { GATEWAY_ERROR_CATALOGUE } from './gateway-catalogue.js';
import { GPU_CHECKPOINT_ERROR_CATALOGUE } from './gpu-checkpoint-catalogue.js';
import { JOBS_ERROR_CATALOGUE } from './jobs-catalogue.js';
import { NODE_AGENT_ERROR_CATALOGUE } from './node-agent-catalogue.js';

const read = (name: string) => readFileSync(new URL(`../../docs/${name}`, import.meta.url), 'utf8');

/**
 * The error table of a document: every row whose first cell is a backticked UPPER_SNAKE code and whose second is
 * a status, as code -> status. A code documented twice keeps its first row, and the test sees the duplicate.
 */
function documentedCodes(markdown: string): { statuses: Record<string, number>; duplicates: string[] } {
  const statuses: Record<string, number> = {};
  const duplicates: string[] = [];
  for (const [, code = '', status] of markdown.matchAll(/^\| `([A-Z][A-Z_]+)` +\| (\d{3}) +\|/gm)) {
    if (Object.hasOwn(statuses, code)) duplicates.push(code);
    else statuses[code] = Number(status);
  }
  return { statuses, duplicates };
}

function statuses(catalogue: Record<string, CatalogueEntry>): Record<string, number> {
  return Object.fromEntries(Object.entries(catalogue).map(([code, entry]) => [code, entry.status]));
}

describe.each([
  { doc: 'api.md', catalogue: API_ERROR_CATALOGUE },
  { doc: 'gateway.md', catalogue: GATEWAY_ERROR_CATALOGUE },
  { doc: 'workers.md', catalogue: GPU_CHECKPOINT_ERROR_CATALOGUE },
  { doc: 'jobs-internals.md', catalogue: JOBS_ERROR_CATALOGUE },
  { doc: 'kubernetes.md', catalogue: NODE_AGENT_ERROR_CATALOGUE },
])('docs/$doc error table', ({ doc, catalogue }) => {
  const documented = documentedCodes(read(doc));

  it('has a row for every code of the catalogue, with its status', () => {
    const missing = Object.keys(catalogue).filter((code) => !Object.hasOwn(documented.statuses, code));
    expect(missing).toEqual([]);
  });

  it('documents no code the catalogue does not have, and each once', () => {
    const unknown = Object.keys(documented.statuses).filter((code) => !Object.hasOwn(catalogue, code));
    expect(unknown).toEqual([]);
    expect(documented.duplicates).toEqual([]);
  });

  it("gives each code the catalogue's status", () => {
    expect(documented.statuses).toEqual(statuses(catalogue));
  });
});
