/**
 * A real `JobService` over a store, as `corral serve` builds one but with no gateway, worker or webhook behind it:
 * for API suites that submit jobs and for the test API's cancel and retry (test/support/api.ts).
 */
import { JobEvents } from '../../src/jobs/job-events.js';
import { JobService } from '../../src/jobs/job-service.js';
import { Wakeups } from '../../src/jobs/wakeups.js';
import { systemClock, systemTimers } from '../../src/ports/clock.js';
import { CallerKeys } from '../../src/service/caller-keys.js';
import type { Store } from '../../src/store/store.js';

export function testJobService(store: Store): JobService {
  return new JobService({
    jobs: store.jobs,
    clock: systemClock,
    wakeups: new Wakeups({ timers: systemTimers, recheckMs: 500 }),
    events: new JobEvents(),
    findEndpoints: (ref, reach, limit) => store.endpoints.matching(ref, reach, limit),
    findModelEndpoints: (reach, limit) => store.endpoints.withOpenAIModel(reach, limit),
    keys: new CallerKeys({ verify: async () => undefined, clock: systemClock }),
    retention: { asyncMs: 60_000, syncMs: 60_000 },
  });
}
