/**
 * `corral cleanup`'s work on the host: what one installation left on the Docker engine (containers, networks,
 * volumes: runtime/docker/installation-leftovers.ts) and its holes in the host guard's firewall chain
 * (host-guard.ts), each removed, or only listed for a dry run. Whether its `corral serve` still runs is the
 * command's to check first (cli/cleanup.ts).
 */
import Dockerode from 'dockerode';
import { engineAddress } from '../runtime/docker/docker-runtime.js';
import { hostGuardUnable, removeInstallationRules } from '../runtime/docker/host-guard.js';
import { installationLeftovers, removeLeftover } from '../runtime/docker/installation-leftovers.js';

export interface CleanupReport {
  /** What was removed (or, for a dry run, would be), one line each. */
  removed: string[];
  /** What could not be removed, with why. */
  failed: string[];
  /** What was not looked at, with why (no engine, not root). */
  skipped: string[];
}

export async function cleanUpInstallation(options: {
  installationId: string;
  dryRun: boolean;
  docker?: Dockerode;
}): Promise<CleanupReport> {
  const { installationId, dryRun } = options;
  const docker = options.docker ?? new Dockerode();
  const report: CleanupReport = { removed: [], failed: [], skipped: [] };
  const leftovers = await installationLeftovers(docker, installationId).catch((error: unknown) => {
    report.skipped.push(`Docker: ${error instanceof Error ? error.message : String(error)}`);
    return [];
  });
  for (const leftover of leftovers) {
    const text = `${leftover.kind} ${leftover.name}`;
    const why = dryRun ? undefined : await removeLeftover(docker, leftover);
    if (why === undefined) report.removed.push(text);
    else report.failed.push(`${text}: ${why}`);
  }
  const unable = hostGuardUnable({ engineAddress: engineAddress(docker), uid: process.getuid?.() });
  if (unable) report.skipped.push(`firewall rules: ${unable}`);
  else {
    const rules = await removeInstallationRules({ installationId, dryRun });
    report.removed.push(...rules.removed.map((rule) => `firewall rule: ${rule}`));
    report.failed.push(...rules.failed.map((rule) => `firewall rule: ${rule}`));
  }
  return report;
}
