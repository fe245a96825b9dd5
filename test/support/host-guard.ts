/**
 * Whether this machine can run the suites that change the host guard's firewall for real (root, iptables, and a
 * Docker engine), said once: skipped with the reason, or a failure under CORRAL_REQUIRE_INTEGRATION=1.
 */
import { spawnSync } from 'node:child_process';
import { integrationAvailable } from './integration.js';
import { dockerAvailable } from './test-image.js';

/** Root and a working iptables (the chain CORRAL-WORKERS is changed by the suite). */
export function canChangeFirewall(): boolean {
  return (
    process.getuid?.() === 0 && spawnSync('iptables', ['-w', '-S', 'INPUT'], { stdio: 'ignore' }).status === 0
  );
}

export function guardedDockerAvailable(): boolean {
  return integrationAvailable(
    'Docker with root and iptables',
    dockerAvailable() && canChangeFirewall(),
    'run as root on a host with a Docker engine and iptables',
  );
}
