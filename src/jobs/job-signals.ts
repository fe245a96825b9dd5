/**
 * Queued jobs as the autoscaler's input (ports/queue-signals.ts): each endpoint's IN_QUEUE jobs (but lowPriority
 * ones) count as queued requests, the oldest's submission as the oldest request's arrival, and jobs in progress
 * on a worker as its requests in flight (so it is busy, and is not scaled down before `freeTimeout` with no job in
 * progress). The store is read on an interval into a snapshot (the scaler reads synchronously), and at once
 * after a job is queued, which also tells the scaler's `onQueued` listeners: a first job wakes an endpoint from
 * zero at once. An endpoint that has had jobs keeps a signal (an empty one) once they have all ended, and a
 * worker's last job's end counts as its last busy time: without them the scaler would read "no traffic yet" and
 * scale a jobs-only endpoint to minWorkers as soon as its last job ended, whatever its `freeTimeout`. `withJobs`
 * adds this to the gateway's own signals. The same snapshot is every endpoint's jobs queued and in progress for the
 * jobs' metrics (`live`): one store read serves both. For the autoscaler (`withJobs`), a take under way and the jobs
 * it handed make the worker busy at once, until the next read shows them (`freshLoad`): a scale-down decided between
 * two reads never picks a worker that is taking or has just taken a job (issue 29).
 */
import type { Clock, Timers } from '../ports/clock.js';
import type { EndpointQueueSignal, QueueSignals } from '../ports/queue-signals.js';
import type { LiveJobs } from '../ports/traffic.js';
import type { JobSignalStore } from '../store/jobs/job-roles.js';
import type { JobQueueSignal } from '../store/jobs/jobs.js';
import type { JobsLogger } from './http-io.js';
import type { JobEvents } from './job-events.js';

export interface JobSignalsOptions {
  jobs: JobSignalStore;
  events: JobEvents;
  clock: Clock;
  timers: Timers;
  logger: JobsLogger;
  refreshMs: number;
}

/** The signal of an endpoint whose jobs have all ended. */
const NO_JOBS: JobQueueSignal = { queued: 0, lowPriorityQueued: 0, oldestQueuedAt: null, inProgress: {} };

export class JobSignals {
  readonly #o: JobSignalsOptions;
  #snapshot = new Map<string, JobQueueSignal>();
  /** When each worker was last seen with a job in progress. */
  readonly #lastBusy = new Map<string, number>();
  /** Endpoints that have had a job since start: their signal stays defined (empty) once none is left. */
  readonly #seen = new Set<string>();
  readonly #listeners = new Set<(endpointId: string) => void>();
  /**
   * Jobs this process's takes are taking or handed since the store was last read (the snapshot lags by up to a
   * refresh): worker -> its endpoint, takes under way, and jobs handed with the read they were handed during.
   */
  readonly #fresh = new Map<string, { endpointId: string; taking: number; handed: number; read: number }>();
  /** Store reads begun so far: a hand-over before a read began is in that read's snapshot. */
  #reads = 0;
  #timer: unknown;
  #refreshing: Promise<void> | undefined;
  #again = false;
  #closed = false;
  readonly #unsubscribe: () => void;

  constructor(options: JobSignalsOptions) {
    this.#o = options;
    const offQueued = options.events.on('queued', ({ endpointId, lowPriority }) => {
      if (lowPriority) return;
      // The snapshot first, so that the pass the listeners ask for sees the job.
      void this.refresh().then(() => {
        for (const listener of this.#listeners) listener(endpointId);
      });
    });
    // A job shorter than the refresh interval is never seen in progress: its end is its worker's last busy time.
    const offFinished = options.events.on('finished', ({ job }) => {
      if (job.workerId === null) return;
      this.#lastBusy.set(job.workerId, this.#o.clock());
      this.#seen.add(job.endpointId);
      const fresh = this.#fresh.get(job.workerId);
      if (fresh && fresh.handed > 0) {
        fresh.handed -= 1;
        this.#dropIfIdle(job.workerId);
      }
    });
    const offTaking = options.events.on('taking', ({ endpointId, workerId }) => {
      const fresh = this.#freshOf(endpointId, workerId);
      fresh.taking += 1;
    });
    const offTook = options.events.on('took', ({ endpointId, workerId, count }) => {
      const fresh = this.#freshOf(endpointId, workerId);
      fresh.taking = Math.max(0, fresh.taking - 1);
      if (count > 0) {
        fresh.handed += count;
        fresh.read = this.#reads;
        this.#lastBusy.set(workerId, this.#o.clock());
        this.#seen.add(endpointId);
      }
      this.#dropIfIdle(workerId);
    });
    this.#unsubscribe = () => {
      offQueued();
      offFinished();
      offTaking();
      offTook();
    };
  }

  start(): void {
    this.#schedule();
  }

  /** Reads the store into the snapshot (one read at a time; a call meanwhile reads again after it). */
  refresh(): Promise<void> {
    if (this.#refreshing) {
      this.#again = true;
      return this.#refreshing;
    }
    this.#refreshing = (async () => {
      do {
        this.#again = false;
        const read = ++this.#reads;
        try {
          const snapshot = await this.#o.jobs.queueSignals();
          const now = this.#o.clock();
          for (const [endpointId, signal] of snapshot) {
            this.#seen.add(endpointId);
            for (const [workerId, n] of Object.entries(signal.inProgress))
              if (n > 0) this.#lastBusy.set(workerId, now);
          }
          this.#snapshot = snapshot;
          // Jobs handed before this read began are in its snapshot (or finished since).
          for (const [workerId, fresh] of this.#fresh)
            if (fresh.read < read) {
              fresh.handed = 0;
              this.#dropIfIdle(workerId);
            }
        } catch (error) {
          this.#o.logger.warn(
            { err: error instanceof Error ? error.message : String(error) },
            'job queue signals not read',
          );
        }
      } while (this.#again);
    })().finally(() => {
      this.#refreshing = undefined;
    });
    return this.#refreshing;
  }

  /**
   * The endpoint's jobs as a queue signal; undefined: it has had no job since start. Low-priority jobs alone add no
   * worker: they read as the empty signal.
   */
  signal(endpointId: string, exists: (workerId: string) => boolean): JobQueueSignal | undefined {
    for (const workerId of this.#lastBusy.keys()) if (!exists(workerId)) this.#lastBusy.delete(workerId);
    const signal = this.#snapshot.get(endpointId);
    if (signal && (signal.queued > 0 || Object.keys(signal.inProgress).length > 0)) return signal;
    const fresh = [...this.#fresh.values()].some((f) => f.endpointId === endpointId);
    return signal || fresh || this.#seen.has(endpointId) ? NO_JOBS : undefined;
  }

  /**
   * What this process's takes add to the worker's load since the store was last read: a take under way, and the
   * jobs it handed. The autoscaler's view (`withJobs`) adds it; `health` reads the store's snapshot alone (a polling
   * worker is idle there).
   */
  freshLoad(workerId: string): number {
    const fresh = this.#fresh.get(workerId);
    return fresh ? fresh.taking + fresh.handed : 0;
  }

  #freshOf(endpointId: string, workerId: string): { taking: number; handed: number; read: number } {
    let fresh = this.#fresh.get(workerId);
    if (!fresh) {
      fresh = { endpointId, taking: 0, handed: 0, read: this.#reads };
      this.#fresh.set(workerId, fresh);
    }
    return fresh;
  }

  #dropIfIdle(workerId: string): void {
    const fresh = this.#fresh.get(workerId);
    if (fresh && fresh.taking === 0 && fresh.handed === 0) this.#fresh.delete(workerId);
  }

  /** Every endpoint's jobs IN_QUEUE (lowPriority ones too) and IN_PROGRESS at the last read (none: absent). */
  live(): Map<string, LiveJobs> {
    const live = new Map<string, LiveJobs>();
    for (const [endpointId, signal] of this.#snapshot) {
      let inProgress = 0;
      for (const n of Object.values(signal.inProgress)) inProgress += n;
      live.set(endpointId, { inQueue: signal.queued + signal.lowPriorityQueued, inProgress });
    }
    return live;
  }

  lastBusyAt(workerId: string): number | undefined {
    return this.#lastBusy.get(workerId);
  }

  onQueued(listener: (endpointId: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#unsubscribe();
    this.#o.timers.clearTimeout(this.#timer);
    await this.#refreshing;
  }

  #schedule(): void {
    if (this.#closed) return;
    this.#timer = this.#o.timers.setTimeout(() => {
      void this.refresh().finally(() => this.#schedule());
    }, this.#o.refreshMs);
  }
}

/** The gateway's signals with the endpoint's jobs added. */
export function withJobs(base: QueueSignals, jobs: JobSignals): QueueSignals {
  return {
    queueSignal(endpointId, exists): EndpointQueueSignal | undefined {
      const requests = base.queueSignal(endpointId, exists);
      const queued = jobs.signal(endpointId, exists);
      if (!queued) return requests;
      const oldest = [requests?.oldestEnqueuedAt ?? null, queued.oldestQueuedAt].filter(
        (t): t is number => t !== null,
      );
      return {
        queueLength: (requests?.queueLength ?? 0) + queued.queued,
        oldestEnqueuedAt: oldest.length === 0 ? null : Math.min(...oldest),
        inFlight: (workerId) =>
          (requests?.inFlight(workerId) ?? 0) + (queued.inProgress[workerId] ?? 0) + jobs.freshLoad(workerId),
        lastBusyAt: (workerId) => {
          const times = [requests?.lastBusyAt(workerId), jobs.lastBusyAt(workerId)].filter(
            (t): t is number => t !== undefined,
          );
          return times.length === 0 ? undefined : Math.max(...times);
        },
        ...(requests?.awaited ? { awaited: requests.awaited } : {}),
      };
    },
    onQueued(listener) {
      const offRequests = base.onQueued(listener);
      const offJobs = jobs.onQueued(listener);
      return () => {
        offRequests();
        offJobs();
      };
    },
  };
}
