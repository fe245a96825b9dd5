import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { GATEWAY_ERROR_CATALOGUE } from './errors.js';

const doc = readFileSync(new URL('../../docs/gateway.md', import.meta.url), 'utf8');

describe('docs/gateway.md', () => {
  it('has a row for every gateway error code, with its status', () => {
    const rows = new Map(
      [...doc.matchAll(/^\| `([A-Z_]+)` +\| (\d{3}) +\|/gm)].map((m) => [m[1] as string, Number(m[2])]),
    );
    for (const [code, { status }] of Object.entries(GATEWAY_ERROR_CATALOGUE)) {
      expect(rows.get(code), code).toBe(status);
    }
  });
});
