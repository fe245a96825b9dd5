/**
 * Docker engine answers -> runtime shapes. Pure: every function takes what the engine said and returns plain data.
 */
import type { ContainerInfo, ContainerInspectInfo } from 'dockerode';
import { exitDescription } from '../exit-description.js';
import {
  type ExitReason,
  LABELS,
  type RuntimeEvent,
  type RuntimePhase,
  type RuntimeWorker,
  type WorkerStats,
} from '../types.js';
import { DOCKER_LABELS } from './container-spec.js';

const INTERNAL_LABELS = new Set<string>(Object.values(DOCKER_LABELS));

/** created/restarting -> starting, running/paused -> running, exited/dead/removing -> exited. */
export function phaseOf(state: string): RuntimePhase {
  switch (state.toLowerCase()) {
    case 'running':
    case 'paused':
      return 'running';
    case 'exited':
    case 'dead':
    case 'removing':
      return 'exited';
    default:
      return 'starting';
  }
}

/** The exit code in a listing's Status, e.g. `Exited (137) 5 seconds ago`. */
export function exitCodeFromStatus(status: string): number | undefined {
  const match = /^Exited \((-?\d+)\)/.exec(status.trim());
  return match?.[1] === undefined ? undefined : Number(match[1]);
}

/**
 * The worker's labels as the controller set them: without the Docker runtime's bookkeeping labels and without
 * those the container inherited from its image.
 */
export function publicLabels(labels: Record<string, string> | null | undefined): Record<string, string> {
  const all = labels ?? {};
  const keys = all[DOCKER_LABELS.keys];
  const own = keys === undefined ? undefined : new Set(keys.split(','));
  return Object.fromEntries(
    Object.entries(all).filter(([key]) => !INTERNAL_LABELS.has(key) && (own === undefined || own.has(key))),
  );
}

function gpuUuids(labels: Record<string, string>): string[] {
  return (labels[DOCKER_LABELS.gpus] ?? '').split(',').filter((uuid) => uuid !== '');
}

/** Wildcard bind addresses are reached through loopback. */
function reachableHost(ip: string | undefined, fallback: string): string {
  if (!ip || ip === '0.0.0.0' || ip === '::') return fallback;
  return ip;
}

export function exitMessage(
  exitCode: number | undefined,
  detail?: { exitReason?: ExitReason; memoryLimitBytes?: number; error?: string },
) {
  const code =
    exitCode === undefined && detail?.exitReason === undefined
      ? 'exited'
      : exitDescription({
          exitCode,
          exitReason: detail?.exitReason,
          memoryLimitBytes: detail?.memoryLimitBytes,
        });
  const error = detail?.error ? `: ${detail.error}` : '';
  return `${code}${error}`;
}

/**
 * The kernel's OOM killer ended it: only when the engine says so (State.OOMKilled, set from the cgroup's OOM
 * events). A 137 under a memory limit is not enough: `docker kill`, Corral's own removals and a process's own
 * SIGKILL end the same way, and read as `killed (signal 9)` (exit-description.ts).
 */
export function oomKilled(state: { OOMKilled?: boolean }): boolean {
  return state.OOMKilled === true;
}

function baseWorker(labels: Record<string, string>) {
  return {
    workerId: labels[LABELS.worker] ?? '',
    endpointId: labels[LABELS.endpoint] ?? '',
    revision: Number(labels[LABELS.revision] ?? 0) || 0,
    labels: publicLabels(labels),
    gpuUuids: gpuUuids(labels),
  };
}

/** One entry of `GET /containers/json`. */
export function workerFromListing(info: ContainerInfo, hostIp: string): RuntimeWorker {
  const labels = info.Labels ?? {};
  const phase = phaseOf(info.State);
  const appPort = Number(labels[DOCKER_LABELS.port]);
  const published = (info.Ports ?? []).find(
    (port) => port.Type === 'tcp' && port.PublicPort > 0 && (!appPort || port.PrivatePort === appPort),
  );
  const exitCode = phase === 'exited' ? exitCodeFromStatus(info.Status ?? '') : undefined;
  return {
    ...baseWorker(labels),
    phase,
    ...(published
      ? { address: { host: reachableHost(published.IP, hostIp), port: published.PublicPort } }
      : {}),
    ...(exitCode === undefined ? {} : { exitCode }),
    message: phase === 'exited' ? exitMessage(exitCode) : (info.Status ?? info.State),
    createdAt: (info.Created ?? 0) * 1000,
    // A paused container is a frozen worker (docker-tiers.ts says whether it is suspended too).
    ...(info.State?.toLowerCase() === 'paused' ? { tier: 'frozen' as const } : {}),
  };
}

/** `GET /containers/{id}/json`. */
export function workerFromInspect(info: ContainerInspectInfo, hostIp: string): RuntimeWorker {
  const labels = info.Config?.Labels ?? {};
  const phase = phaseOf(info.State.Status);
  const appPort = labels[DOCKER_LABELS.port];
  const ports = (info.NetworkSettings?.Ports ?? {}) as Record<
    string,
    { HostIp: string; HostPort: string }[] | null
  >;
  const binding = (appPort ? ports[`${appPort}/tcp`] : Object.values(ports)[0])?.find(
    (entry) => Number(entry.HostPort) > 0,
  );
  const exitCode = phase === 'exited' ? info.State.ExitCode : undefined;
  const memory = info.HostConfig?.Memory;
  const memoryLimitBytes = memory !== undefined && memory > 0 ? memory : undefined;
  const exitReason: ExitReason | undefined =
    phase === 'exited' && oomKilled(info.State) ? 'out-of-memory' : undefined;
  const message =
    phase === 'exited'
      ? exitMessage(exitCode, { exitReason, memoryLimitBytes, error: info.State.Error })
      : info.State.Status;
  // The engine's zero time (0001-01-01) parses to a negative number: never finished.
  const finished = phase === 'exited' ? Date.parse(info.State.FinishedAt ?? '') : Number.NaN;
  return {
    ...baseWorker(labels),
    phase,
    ...(binding
      ? { address: { host: reachableHost(binding.HostIp, hostIp), port: Number(binding.HostPort) } }
      : {}),
    ...(exitCode === undefined ? {} : { exitCode }),
    ...(exitReason === undefined ? {} : { exitReason }),
    ...(memoryLimitBytes === undefined ? {} : { memoryLimitBytes }),
    message,
    createdAt: Date.parse(info.Created) || 0,
    ...(finished > 0 ? { finishedAt: finished } : {}),
    ...(info.State.Paused === true ? { tier: 'frozen' as const } : {}),
  };
}

/** What `GET /containers/{id}/stats?stream=false` may carry; engines leave fields out for stopped containers. */
export interface RawStats {
  cpu_stats?: {
    cpu_usage?: { total_usage?: number; percpu_usage?: number[] | null };
    system_cpu_usage?: number;
    online_cpus?: number;
  };
  precpu_stats?: RawStats['cpu_stats'];
  memory_stats?: {
    usage?: number;
    stats?: { total_inactive_file?: number; inactive_file?: number; cache?: number } | null;
  };
}

/** CPU percent and memory the way `docker stats` computes them (100% = one core; page cache not counted). */
export function computeStats(raw: RawStats): WorkerStats {
  const cpu = raw.cpu_stats ?? {};
  const pre = raw.precpu_stats ?? {};
  const cpuDelta = (cpu.cpu_usage?.total_usage ?? 0) - (pre.cpu_usage?.total_usage ?? 0);
  const systemDelta = (cpu.system_cpu_usage ?? 0) - (pre.system_cpu_usage ?? 0);
  const cpus = cpu.online_cpus || cpu.cpu_usage?.percpu_usage?.length || 1;
  const cpuPercent = cpuDelta > 0 && systemDelta > 0 ? (cpuDelta / systemDelta) * cpus * 100 : 0;
  const memory = raw.memory_stats ?? {};
  const stats = memory.stats ?? {};
  const cache = stats.total_inactive_file ?? stats.inactive_file ?? stats.cache ?? 0;
  const usage = memory.usage ?? 0;
  return { cpuPercent, memoryBytes: Math.max(0, usage - cache) };
}

/**
 * Signals a stop sends (INT, QUIT, KILL, TERM; `docker stop` sends the image's StopSignal, TERM by default), or none
 * said. Others (HUP, USR1...) usually ask an app to reload, not to end.
 */
const STOP_SIGNALS = new Set(['2', '3', '9', '15', 'SIGINT', 'SIGQUIT', 'SIGKILL', 'SIGTERM']);

function stopSignal(signal: string | undefined): boolean {
  return signal === undefined || signal === '' || STOP_SIGNALS.has(signal);
}

/** One message of `GET /events` (only the fields used here). */
export interface DockerEventMessage {
  Type?: string;
  Action?: string;
  status?: string;
  time?: number;
  timeNano?: number;
  Actor?: { ID?: string; Attributes?: Record<string, string> };
}

/**
 * start and restart -> started, kill with a stop signal -> stopping, die -> exited (with its exit code), destroy -> removed, pause ->
 * paused, unpause -> resumed; anything else is ignored. A `docker restart` sends kill, die, stop, start, restart:
 * the controller waits a moment for the start after such a die, and reads the new address from its next listing.
 * A crash or the OOM killer sends no kill before its die.
 */
export function eventFromDocker(message: DockerEventMessage): RuntimeEvent | undefined {
  if (message.Type !== undefined && message.Type !== 'container') return undefined;
  const attributes = message.Actor?.Attributes ?? {};
  const workerId = attributes[LABELS.worker];
  if (!workerId || attributes[LABELS.managed] !== 'true') return undefined;
  switch (message.Action ?? message.status) {
    case 'start':
    case 'restart':
      return { type: 'started', workerId };
    case 'kill':
      return stopSignal(attributes.signal) ? { type: 'stopping', workerId } : undefined;
    case 'pause':
      return { type: 'paused', workerId };
    case 'unpause':
      return { type: 'resumed', workerId };
    case 'die': {
      const exitCode = Number(attributes.exitCode);
      return { type: 'exited', workerId, exitCode: Number.isFinite(exitCode) ? exitCode : -1 };
    }
    case 'destroy':
      return { type: 'removed', workerId };
    default:
      return undefined;
  }
}
