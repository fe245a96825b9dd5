/**
 * Vitest's projects, one per test tier (test/support/tiers.ts, docs/contributing.md): `unit` (SQLite, manual time, no
 * services), `integration` (Docker, PostgreSQL, Chromium, a real `corral serve`) and `postgres` (the unit tier's
 * per-store suites again, on PostgreSQL only: part of the integration tier). `vitest run` runs all three.
 */
import { defineConfig } from 'vitest/config';
import { integrationGlobs, POSTGRES_RERUN, STORES_ENV, unitGlobs } from './test/support/tiers.js';

/** The PostgreSQL rerun is left out on a machine without PostgreSQL unless CI requires it (then it fails). */
const withPostgres =
  Boolean(process.env.CORRAL_TEST_DATABASE_URL) || process.env.CORRAL_REQUIRE_INTEGRATION === '1';

export default defineConfig({
  test: {
    testTimeout: 20_000,
    hookTimeout: 60_000,
    reporters: ['default'],
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: unitGlobs(),
          exclude: ['**/node_modules/**', ...integrationGlobs()],
          env: { [STORES_ENV]: 'sqlite' },
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: integrationGlobs(),
          exclude: ['**/node_modules/**'],
          globalSetup: ['test/support/global-setup.ts'],
        },
      },
      ...(withPostgres
        ? [
            {
              extends: true as const,
              test: { name: 'postgres', include: POSTGRES_RERUN, env: { [STORES_ENV]: 'postgres' } },
            },
          ]
        : []),
    ],
  },
});
