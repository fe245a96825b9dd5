/**
 * Where `corral serve` binds the worker-facing listener, by runtime. Docker: the runtime makes the listener's
 * network and says its gateway address (runtime/select.ts `workerListener.onAddress`) after it has opened the host
 * guard's hole for that address and the port, so the port is fixed first (a configured 0 becomes a free port
 * here); the listener binds once the address is said, later for an awaited engine. Other runtimes: the configured
 * address (`workers.listen`), at once.
 */
import type { HostPort } from '../config/settings.js';
import { freePort } from '../runtime/local/process-control.js';

export interface WorkerListenerPlace {
  /** The port the listener binds, and the host guard's hole lets through on Docker. */
  port: number;
  /** Handed to selectRuntime: the runtime says the address here. */
  onAddress(address: string): void;
  /** The address said (Docker), else the configured host: where the listener binds. */
  address(runtime: string): Promise<HostPort>;
}

/** Docker may be chosen (`docker`, or `auto` finding an engine): the port is fixed before the runtime starts. */
export async function placeWorkerListener(options: {
  listen: HostPort;
  runtimeChoice: string;
}): Promise<WorkerListenerPlace> {
  const { listen, runtimeChoice } = options;
  const dockerPossible = runtimeChoice === 'docker' || runtimeChoice === 'auto';
  const port = dockerPossible && listen.port === 0 ? await freePort(new Set()) : listen.port;
  let said: (address: string) => void = () => {};
  const told = new Promise<string>((resolve) => {
    said = resolve;
  });
  return {
    port,
    onAddress: (address) => said(address),
    address: async (runtime) => (runtime === 'docker' ? { host: await told, port } : listen),
  };
}
