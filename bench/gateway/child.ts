/**
 * The entry of the gateway suite's child processes (forked by processes.ts `forkRole`, never imported): runs the
 * role its environment names. Each role loads only its own module, so that a proxy child carries nothing of the
 * orchestration.
 */
import { ROLE_ENV } from './processes.js';

async function runRole(role: string | undefined): Promise<void> {
  if (role === 'gateway') return (await import('./gateway-child.js')).gatewayChild();
  if (role === 'bare') return (await import('./bare-proxy-child.js')).bareProxyChild();
  if (role === 'loadgen') return (await import('./loadgen.js')).loadgenChild();
  throw new Error(`${ROLE_ENV} names no role: ${role}`);
}

runRole(process.env[ROLE_ENV]).catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
