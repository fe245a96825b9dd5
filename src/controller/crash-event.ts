/** The `crashed` event an endpoint's log gets when one of its started workers exits or vanishes (docs/api.md). */
import type { WorkerErrorCode } from '../domain/worker.js';
import type { RuntimeWorker } from '../runtime/types.js';
import type { NewEvent } from '../store/events.js';

/** `reason`: how it ended (exitDescription), e.g. `ran out of memory: limit 256 MiB (exit code 137)`. */
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
