/**
 * What the health prober checks of one worker, or nothing: only a started worker with an address is probed. A queue
 * worker pulls its jobs, so its polls and pings are its health (`queueProbe`); with `healthy.path` set it gets the
 * HTTP probe of that path too, and a probe passes only when both do (docs/jobs.md, Queue workers' health).
 */
import type { Endpoint } from '../../domain/endpoint.js';
import { fallsBackToRoot, probesHttp } from '../../domain/health-path.js';
import { isStarted, type ManagedWorker } from '../workers/managed-worker.js';
import type { ProbeTarget } from './health-prober.js';
import { appPortOf } from './health-report.js';
import type { ProbeResult } from './probe-result.js';

export interface ProbeTargetInput {
  record: ManagedWorker | undefined;
  endpoint: Endpoint | undefined;
  runtimeName: Parameters<typeof appPortOf>[0];
  queueProbe: ((endpointId: string, workerId: string) => Promise<ProbeResult>) | undefined;
}

export function probeTargetOf(input: ProbeTargetInput): ProbeTarget | undefined {
  const { record, endpoint, queueProbe } = input;
  if (!record || !endpoint || !record.address || !isStarted(record.state)) return undefined;
  const probe =
    endpoint.spec.type === 'queue' && queueProbe ? () => queueProbe(endpoint.id, record.id) : undefined;
  return {
    address: record.address,
    check: endpoint.spec.health,
    appPort: appPortOf(input.runtimeName, record.address, endpoint.spec.port),
    fast: record.readyAt === null,
    ...(fallsBackToRoot(endpoint.spec) ? { rootFallback: true } : {}),
    ...(probe ? { probe, ...(probesHttp(endpoint.spec) ? { alsoHttp: true } : {}) } : {}),
  };
}
