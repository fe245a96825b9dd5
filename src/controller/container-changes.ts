/**
 * What the controller does when a started worker's container changes under it, between passes: a runtime event
 * (docker's die, start, restart, pause, unpause) or a listing whose address differs from the one the worker was
 * routed at (a `docker restart` publishes the port anew). Pure: plain records in, the response out; controller.ts
 * applies it.
 */
import type { RuntimeEvent, RuntimeWorker } from '../runtime/types.js';
import { isStarted, type ManagedWorker } from './workers/managed-worker.js';

export type ContainerResponse =
  /** Nothing beyond the pass every event asks for. */
  | { type: 'none' }
  /**
   * Out of routing now (unhealthy with this message); its health counts start over. `awaitRestart`: its engine was
   * told to stop it and it exited, so a start may follow (mayBeRestarting).
   */
  | { type: 'unroute'; message: string; awaitRestart?: boolean }
  /**
   * Its container exited by itself (a crash, the OOM killer): out of routing now, its state kept. The pass whose
   * listing shows the exit declares it dead with what the runtime says of the exit (out of memory, exit code), so
   * that the endpoint's state sees the death and the state change together (a crash in a run of crashes is no
   * change of the endpoint's state: endpoint-status.ts).
   */
  | { type: 'exited' }
  /** Probe it at once, its counts started over: it may serve again. */
  | { type: 'reprobe' }
  /** Its container answers elsewhere now: routed there once a probe there passes. */
  | { type: 'readdress'; address: { host: string; port: number }; message: string };

type Watched = Pick<ManagedWorker, 'state' | 'engineStopSeen'>;

/**
 * A runtime event about a started worker: a stop, an exit or a pause takes it out of routing at once (the pass that
 * follows replaces a worker whose container stays exited: at once after a crash, after the restart grace when its
 * engine had been told to stop it; a crash keeps its state until then); a start or a resume probes it at once. Events about other workers (pending,
 * draining, unknown) change nothing: the pass decides for them.
 */
export function eventResponse(event: RuntimeEvent, worker: Watched | undefined): ContainerResponse {
  if (!worker || !isStarted(worker.state)) return { type: 'none' };
  switch (event.type) {
    case 'stopping':
      return { type: 'unroute', message: 'its container is being stopped by its engine' };
    case 'exited':
      return worker.engineStopSeen
        ? {
            type: 'unroute',
            message: `its container stopped (exit code ${event.exitCode})`,
            awaitRestart: true,
          }
        : { type: 'exited' };
    case 'paused':
      return { type: 'unroute', message: 'its container is paused' };
    case 'started':
    case 'resumed':
      return { type: 'reprobe' };
    default:
      return { type: 'none' };
  }
}

/**
 * Whether a listing that shows the worker's container exited may be a restart under way (`docker restart` stops
 * the container, then starts it again): its exit after a stop by its engine came less than `graceMs` ago. The worker
 * is out of routing already; a later pass declares it dead if its container has not started again by then. After a
 * crash, or without events (the stream was down), the listing's word is taken at once.
 */
export function mayBeRestarting(
  worker: Pick<ManagedWorker, 'exitSeenAt'>,
  now: number,
  graceMs: number,
): boolean {
  return worker.exitSeenAt !== undefined && now - worker.exitSeenAt < graceMs;
}

/**
 * A listed container of a started worker that runs at another address than the worker's: restarted by its engine
 * (its published port moved). Undefined when nothing moved, or when it is not running (an exit is the pass's).
 */
export function movedAddress(
  worker: Pick<ManagedWorker, 'state' | 'address'>,
  container: Pick<RuntimeWorker, 'phase' | 'address'>,
): ContainerResponse | undefined {
  const to = container.address;
  if (!isStarted(worker.state) || container.phase !== 'running' || !to) return undefined;
  const from = worker.address;
  if (from && from.host === to.host && from.port === to.port) return undefined;
  return {
    type: 'readdress',
    address: { host: to.host, port: to.port },
    message: `its container restarted at ${to.host}:${to.port}; waiting for its health check`,
  };
}
