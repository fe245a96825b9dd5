/** `corral status`: the cluster as a table, and as the API's answer under --json. */
import { afterEach, describe, expect, it } from 'vitest';
import { makeHarness, runCommand } from '../../test/support/cli-harness.js';
import type { WireCluster } from '../client/index.js';
import { makeStatusCommand } from './status.js';

afterEach(() => {
  process.exitCode = undefined;
});

const replica = (id: string, over: Partial<WireCluster['replicas'][number]> = {}) => ({
  id,
  host: `host-${id}`,
  pid: 100,
  apiUrl: `http://${id}:8080`,
  startedAt: '2026-11-26T03:00:00.000Z',
  lastSeenAt: '2026-11-26T03:05:00.000Z',
  alive: true,
  leader: false,
  inFlight: 0,
  queued: 0,
  ...over,
});

const cluster: WireCluster = {
  database: 'postgres',
  self: 'rep-b',
  leader: { replica: 'rep-a', since: '2026-11-26T03:01:00.000Z', token: 4 },
  replicas: [replica('rep-a', { leader: true, inFlight: 12 }), replica('rep-b', { alive: false, queued: 3 })],
};

describe('corral status', () => {
  it('prints the leader, then one row per replica', async () => {
    const h = makeHarness({ routes: { 'GET cluster': { body: cluster } } });
    await runCommand(makeStatusCommand(h.deps), []);
    expect(h.err()).toBe('');
    expect(h.out()).toBe(
      [
        'database: postgres',
        'leader: rep-a since 2026-11-26T03:01:00.000Z (term 4)',
        '',
        'REPLICA  HOST        PID  STARTED                   LAST SEEN                 STATE          IN FLIGHT  QUEUED  API',
        'rep-a    host-rep-a  100  2026-11-26T03:00:00.000Z  2026-11-26T03:05:00.000Z  alive, leader         12       0  http://rep-a:8080',
        'rep-b *  host-rep-b  100  2026-11-26T03:00:00.000Z  2026-11-26T03:05:00.000Z  silent                 0       3  http://rep-b:8080',
        '(* the replica that answered)',
        '',
      ].join('\n'),
    );
  });

  it('says when no replica leads, and prints the answer as it is under --json', async () => {
    const none = { ...cluster, leader: null };
    const h = makeHarness({ routes: { 'GET cluster': { body: none } } });
    await runCommand(makeStatusCommand(h.deps), []);
    expect(h.out()).toContain('leader: none (no replica holds the controller lease now)');
    const j = makeHarness({ routes: { 'GET cluster': { body: none } } });
    await runCommand(makeStatusCommand(j.deps), ['--json']);
    expect(JSON.parse(j.out())).toEqual(none);
  });

  it('reports a key that is not an admin key as the API says', async () => {
    const h = makeHarness({
      routes: {
        'GET cluster': {
          status: 401,
          body: {
            code: 401,
            reason: 'UNAUTHENTICATED',
            message: 'GET cluster needs an admin API key; this key is not one',
          },
        },
      },
    });
    await runCommand(makeStatusCommand(h.deps), []);
    expect(h.err()).toContain('UNAUTHENTICATED: GET cluster needs an admin API key');
    expect(process.exitCode).toBe(1);
  });
});
