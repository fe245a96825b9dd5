/**
 * `corral cleanup` against a real `corral serve` on the Docker runtime (SQLite): refused while the server runs;
 * once it stopped, `--dry-run` lists the installation's leftovers (its listener network) and removes nothing, and
 * the real run removes them, saying each, and leaves another installation's network alone.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { listenerNetworkName } from '../../src/runtime/docker/listener-network.js';
import { integrationAvailable } from '../support/integration.js';
import { runCorral, type ServeProcess, startServe } from '../support/process.js';
import { dockerAvailable, removeInstallationResources } from '../support/test-image.js';

const withDocker = integrationAvailable(
  'Docker',
  dockerAvailable(),
  'start dockerd (scripts/provision.sh does)',
);

function networkExists(name: string): boolean {
  return (
    execFileSync('docker', ['network', 'ls', '-q', '--filter', `name=^${name}$`], {
      encoding: 'utf8',
    }).trim() !== ''
  );
}

describe.skipIf(!withDocker)('corral cleanup', () => {
  const dirs: string[] = [];
  const servers: ServeProcess[] = [];
  afterAll(async () => {
    for (const server of servers) {
      await server.stop();
      removeInstallationResources(server.installationId);
    }
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  const serve = async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'corral-cleanup-'));
    dirs.push(dataDir);
    const server = await startServe(
      ['--runtime', 'docker', '--gpus', 'h100-80g:1'],
      { CORRAL_DATA_DIR: dataDir },
      {
        startTimeoutMs: 60_000,
      },
    );
    servers.push(server);
    return { server, dataDir };
  };

  it("refuses while serve runs, lists with --dry-run, then removes one installation's leftovers only", async () => {
    const mine = await serve();
    const other = await serve();
    const network = listenerNetworkName(mine.server.installationId);
    const otherNetwork = listenerNetworkName(other.server.installationId);
    expect(networkExists(network)).toBe(true);
    const env = { CORRAL_DATA_DIR: mine.dataDir };

    const refused = await runCorral(['cleanup'], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('corral serve is running on');
    expect(networkExists(network)).toBe(true);

    expect(await mine.server.stop()).toBe(0);
    const dry = await runCorral(['cleanup', '--dry-run'], env);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain(`installation ${mine.server.installationId}`);
    expect(dry.stdout).toContain(`would remove network ${network}`);
    expect(networkExists(network)).toBe(true);

    const done = await runCorral(['cleanup'], env);
    expect(done.code, done.stderr).toBe(0);
    expect(done.stdout).toContain(`removed network ${network}`);
    expect(networkExists(network)).toBe(false);
    expect(networkExists(otherNetwork)).toBe(true);

    const again = await runCorral(['cleanup'], env);
    expect(again.stdout).toContain('nothing left on this host');
  }, 180_000);
});
