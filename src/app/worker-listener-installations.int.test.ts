// Two installations on one host, with the real engine and the host guard's real iptables rules: one restarts ten
// times (its old listener's hole removed as it stops, the new one's added as it starts, twice with two starts at
// once, its listener network reused), and the other's hole stays all along: its worker still reaches its listener. Needs root, iptables and
// Docker.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import Docker from 'dockerode';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { guardedDockerAvailable } from '../../test/support/host-guard.js';
import { ensureTestImage } from '../../test/support/test-image.js';
import { createWorkerNetwork, fromWorker, removeNetworks } from '../../test/support/worker-network.js';
import { FIREWALL_CHAIN } from '../runtime/docker/firewall-rules.js';
import { HostGuard, removeInstallationRules } from '../runtime/docker/host-guard.js';
import { ensureListenerNetwork, listenerNetworkName } from '../runtime/docker/listener-network.js';
import { type RunningWorkerListener, startWorkerListener } from './worker-listener.js';

const logger = pino({ level: 'silent' });
const available = guardedDockerAvailable();
const SUBNETS = { pool: '172.31.0.0/16', prefixLength: 28 };

/** One installation's listener on its network, behind its own hole. */
interface Installation {
  id: string;
  address: string;
  listener: RunningWorkerListener;
  guard: HostGuard;
}

const docker = new Docker();

async function startInstallation(id: string): Promise<Installation> {
  const address = await ensureListenerNetwork({ docker, installationId: id, subnets: SUBNETS, logger });
  const listener = await startWorkerListener({
    address: { host: address, port: 0 },
    logger,
    handler: (request, response) => {
      if (!request.url?.startsWith('/v2/job-take/')) return false;
      response.end(`take ok ${id}`);
      return true;
    },
  });
  const guard = new HostGuard({
    logger,
    blockHost: true,
    storageNosuid: false,
    workerListener: { address, port: listener.address.port, installationId: id },
  });
  return { id, address, listener, guard };
}

async function stopInstallation(installation: Installation): Promise<void> {
  await installation.guard.release();
  await installation.listener.close();
}

function chain(): string {
  return execFileSync('iptables', ['-w', '-S', FIREWALL_CHAIN], { encoding: 'utf8' });
}

function holesOf(id: string): string[] {
  return chain()
    .split('\n')
    .filter((line) => new RegExp(`--comment "?corral-installation:${id}"? `).test(line));
}

describe.skipIf(!available)('two installations on one host, behind the host guard', () => {
  const kept = `keep${randomBytes(4).toString('hex')}`;
  const restarted = `rest${randomBytes(4).toString('hex')}`;
  const workerNetwork = `corral-test-two-${kept}`;
  let image: string;
  let steady: Installation;
  const running: Installation[] = [];

  beforeAll(async () => {
    image = await ensureTestImage();
    steady = await startInstallation(kept);
    expect(await steady.guard.firewall()).toBe(true);
    await createWorkerNetwork(docker, workerNetwork);
  }, 240_000);

  afterAll(async () => {
    for (const installation of [steady, ...running]) if (installation) await stopInstallation(installation);
    for (const id of [kept, restarted]) await removeInstallationRules({ installationId: id, dryRun: false });
    await removeNetworks(docker, [workerNetwork, listenerNetworkName(kept), listenerNetworkName(restarted)]);
  });

  it("restarting one ten times leaves the other's hole, and its worker reaches its listener", async () => {
    const steadyHole = holesOf(kept);
    expect(steadyHole).toHaveLength(1);
    const addresses = new Set<string>();
    for (let n = 1; n <= 10; n++) {
      const previous = running.splice(0);
      for (const installation of previous) await stopInstallation(installation);
      // Rounds 3 and 7: two processes of the restarted installation start at once (replicas on one host).
      const starting = await Promise.all(
        Array.from({ length: n === 3 || n === 7 ? 2 : 1 }, () => startInstallation(restarted)),
      );
      running.push(...starting);
      for (const s of starting) addresses.add(s.address);
      expect(await Promise.all(starting.map((s) => s.guard.firewall()))).toEqual(starting.map(() => true));
      expect(holesOf(kept), `restart ${n}`).toEqual(steadyHole);
      expect(holesOf(restarted), `restart ${n}`).toHaveLength(starting.length);
    }
    // Its listener network was made once and reused by every start.
    expect(addresses.size).toBe(1);
    const port = steady.listener.address.port;
    const seen = await fromWorker(image, workerNetwork, [
      `http://${steady.address}:${port}/v2/job-take/worker-1`,
      ...running.map((r) => `http://${r.address}:${r.listener.address.port}/v2/job-take/worker-1`),
    ]);
    expect(seen).toEqual([`200 take ok ${kept}`, ...running.map(() => `200 take ok ${restarted}`)]);
  }, 240_000);

  it("corral cleanup's removal takes one installation's holes and leaves the other's", async () => {
    expect(holesOf(restarted).length).toBeGreaterThan(0);
    const dry = await removeInstallationRules({ installationId: restarted, dryRun: true });
    expect(dry.removed).toHaveLength(holesOf(restarted).length);
    expect(holesOf(restarted).length).toBeGreaterThan(0);
    const done = await removeInstallationRules({ installationId: restarted, dryRun: false });
    expect(done).toEqual({ removed: dry.removed, failed: [] });
    expect(holesOf(restarted)).toEqual([]);
    expect(holesOf(kept)).toHaveLength(1);
  });
});
