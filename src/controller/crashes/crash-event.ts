/**
 * The events an endpoint's log gets when one of its workers fails (docs/api.md): `crashed` when a started worker
 * exits or vanishes, `failed` when the controller fails one (its image, its create, its startup deadline).
 */

import type { NewEvent } from '../../domain/records.js';
import type { WorkerErrorCode } from '../../domain/worker.js';
import type { RuntimeWorker } from '../../runtime/types.js';

/**
 * `reason`: how it ended (exitDescription): `ran out of memory: limit 256 MiB (exit code 137)` only when the runtime
 * says the OOM killer ended it (`data.reason` `out-of-memory`), `killed (signal 9, exit code 137)` for any other kill.
 */
export function crashedEvent(
  workerId: string,
  reason: string,
  code: WorkerErrorCode,
  container: RuntimeWorker | undefined,
  at: number,
): NewEvent {
  return {
    at,
    type: 'crashed',
    message: `worker ${workerId} ${reason}`,
    data: {
      workerId,
      error: code,
      exitCode: container?.exitCode ?? null,
      reason: container?.exitReason ?? '',
    },
  };
}

/** `failed`: `worker <id> failed (HEALTH_TIMEOUT): never passed its health check /health within 300 s ...`. */
export function failedEvent(workerId: string, code: WorkerErrorCode, message: string, at: number): NewEvent {
  return {
    at,
    type: 'failed',
    message: `worker ${workerId} failed (${code}): ${message}`,
    data: { workerId, error: code, message },
  };
}
