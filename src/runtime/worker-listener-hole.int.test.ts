// The Docker runtime chosen with a worker-facing listener, against the real engine and iptables: it makes the
// listener's network, says its gateway address, and the host guard's chain gets the one hole to that address and
// port, marked with its installation's id. Needs root, iptables and Docker (src/app/worker-listener.int.test.ts checks the hole from a container).
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import Dockerode from 'dockerode';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { guardedDockerAvailable } from '../../test/support/host-guard.js';
import { DEFAULT_SANDBOX } from '../config/config.js';
import { removeInstallationRules } from './docker/host-guard.js';
import { listenerNetworkName } from './docker/listener-network.js';
import { selectRuntime } from './select.js';
import type { WorkerRuntime } from './types.js';

const logger = pino({ level: 'silent' });
const available = guardedDockerAvailable();

describe.skipIf(!available)('the Docker runtime with a worker-facing listener', () => {
  const installationId = `hole${randomBytes(5).toString('hex')}`;
  let runtime: WorkerRuntime | undefined;

  afterAll(async () => {
    // Closing the runtime takes its hole away; cleanup's removal finds any left (none).
    await runtime?.close();
    expect(await removeInstallationRules({ installationId, dryRun: false })).toEqual({
      removed: [],
      failed: [],
    });
    await new Dockerode()
      .getNetwork(listenerNetworkName(installationId))
      .remove()
      .catch(() => undefined);
  });

  it("makes the listener's network, says its address, and opens the one hole to it", async () => {
    const addresses: string[] = [];
    runtime = await selectRuntime({
      choice: 'docker',
      dataDir: '/tmp',
      logger,
      simulatedGpus: true,
      installationId,
      sandbox: { ...DEFAULT_SANDBOX, subnets: { pool: '172.31.0.0/16', prefixLength: 28 } },
      workerListener: { port: 48082, onAddress: (address) => addresses.push(address) },
    });
    const network = (await new Dockerode().getNetwork(listenerNetworkName(installationId)).inspect()) as {
      IPAM: { Config: { Gateway: string }[] };
    };
    expect(addresses).toEqual([network.IPAM.Config[0]?.Gateway]);
    const chain = execFileSync('iptables', ['-w', '-S', 'CORRAL-WORKERS'], { encoding: 'utf8' });
    expect(chain).toContain(
      `-A CORRAL-WORKERS -d ${addresses[0]}/32 -p tcp -m tcp --dport 48082 -m comment --comment "corral-installation:${installationId}" -j ACCEPT`,
    );
  }, 120_000);
});
