/**
 * Vitest's projects, one per test tier (test/support/tiers.ts, docs/contributing.md): `unit` (SQLite, manual time, no
 * services), `integration` (Docker, PostgreSQL, Chromium, a real `corral serve`) with `integration-quiet` (its files
 * that run away from the heavier ones) and `integration-alone` (its files that must not share the machine), and
 * `store-rerun` (the unit tier's per-store suites again, on PostgreSQL and on SQLite's query thread: part of the
 * integration tier). `vitest run` runs them all, in four steps (`groupOrder`): the unit tier; the PostgreSQL rerun
 * and the integration files side by side (the slowest known first: test/support/slowest-first.ts); the quiet files
 * beside one another only; then the files that run alone, one after another in one process.
 */
import { defineConfig } from 'vitest/config';
import { SlowestFirstSequencer } from './test/support/slowest-first.js';
import {
  FILES_AT_ONCE,
  INTEGRATION_ALONE,
  INTEGRATION_QUIET,
  integrationGlobs,
  POSTGRES_RERUN,
  STORES_ENV,
  unitGlobs,
} from './test/support/tiers.js';

/** The PostgreSQL rerun is left out on a machine without PostgreSQL unless CI requires it (then it fails). */
const withPostgres =
  Boolean(process.env.CORRAL_TEST_DATABASE_URL) || process.env.CORRAL_REQUIRE_INTEGRATION === '1';

export default defineConfig({
  test: {
    testTimeout: 20_000,
    maxWorkers: FILES_AT_ONCE,
    minWorkers: 1,
    hookTimeout: 60_000,
    reporters: ['default'],
    sequence: { sequencer: SlowestFirstSequencer },
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: unitGlobs(),
          exclude: ['**/node_modules/**', ...integrationGlobs()],
          env: { [STORES_ENV]: 'sqlite' },
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: integrationGlobs(),
          exclude: ['**/node_modules/**', ...INTEGRATION_QUIET, ...INTEGRATION_ALONE],
          globalSetup: ['test/support/global-setup.ts'],
          sequence: { groupOrder: 1 },
        },
      },
      {
        extends: true,
        test: {
          name: 'integration-quiet',
          include: INTEGRATION_QUIET,
          globalSetup: ['test/support/global-setup.ts'],
          sequence: { groupOrder: 2 },
        },
      },
      {
        extends: true,
        test: {
          name: 'integration-alone',
          include: INTEGRATION_ALONE,
          globalSetup: ['test/support/global-setup.ts'],
          sequence: { groupOrder: 3 },
          // One fork runs the files one after another (modules reset between files), with nothing else running.
          poolOptions: { forks: { singleFork: true } },
        },
      },
      ...(withPostgres
        ? [
            {
              extends: true as const,
              test: {
                name: 'store-rerun',
                include: POSTGRES_RERUN,
                env: { [STORES_ENV]: 'rerun' },
                sequence: { groupOrder: 1 },
              },
            },
          ]
        : []),
    ],
  },
});
