/**
 * The usage recorder: the leading controller's `WorkerUsageSink` (ports/usage.ts). It keeps each counted worker's
 * open span in memory, and on each change (a lifecycle state, work in flight starting or ending, a UTC hour passing)
 * notes the end of the open span and the start of the next, with the time it happened; the notes are written in one
 * transaction per flush (every `flushMs`), never one write per request. A flush that fails keeps its notes, in order,
 * for the next (a database outage loses no second: each note carries its own time).
 *
 * Durability: the open spans are in the store, so a new recorder (a restart, a new leader) starts from them
 * (`start`): an adopted worker's span goes on; one whose worker is not known after the controller's first pass is
 * closed (`workersKnown`), at its exit time where the runtime told it (the controller passes it with the change).
 *
 * It also sums what it counted since it started (`observed`), for `/metrics`' counters (usage-metrics.ts): seconds
 * of spans continued from the store count from this recorder's start only, so that the replicas' sums add up.
 */
import type { Clock, Timers } from '../ports/clock.js';
import type {
  ObservedUsage,
  UsageState,
  WorkerHolding,
  WorkerUsageSink,
  WorkerUsageState,
} from '../ports/usage.js';
import type { SegmentChange, UsageSegmentRepository } from '../store/usage/usage-segments.js';

const HOUR_MS = 3_600_000;

export interface UsageRecorderLogger {
  warn(fields: object, message: string): void;
}

export interface UsageRecorderOptions {
  segments: Pick<UsageSegmentRepository, 'apply' | 'open'>;
  clock: Clock;
  timers: Timers;
  logger: UsageRecorderLogger;
  /** How often the notes are written (default 1 s). */
  flushMs?: number;
}

interface Counted {
  holding: WorkerHolding;
  /** What the lifecycle says (`idle` for a ready worker: work in flight, `#busy`, makes it active). */
  lifecycle: UsageState;
  /** The state of its open span. */
  span: UsageState;
  /** Its span was continued from the store: an adoption's fresh `starting` does not replace it. */
  continued: boolean;
  /** When its open span began: a change told with an earlier time (an exit the runtime dates) ends it there. */
  since: number;
}

/** The span state of a worker: a ready worker with work in flight is active. */
function spanState(lifecycle: UsageState, busy: boolean): UsageState {
  return lifecycle === 'idle' && busy ? 'active' : lifecycle;
}

export class UsageRecorder implements WorkerUsageSink {
  readonly #o: UsageRecorderOptions;
  readonly #flushMs: number;
  readonly #counted = new Map<string, Counted>();
  /** Workers with work in flight, told before (or without) their lifecycle state. */
  readonly #busy = new Set<string>();
  #notes: SegmentChange[] = [];
  /** The next UTC hour at which every open span is split (so that no span crosses an hour's bucket). */
  #nextHour = Number.POSITIVE_INFINITY;
  #timer: unknown;
  #flushing: Promise<void> | undefined;
  #stopped = false;
  /** The closed part of what this recorder counted, per owner, endpoint, GPU product and state. */
  readonly #observed = new Map<string, ObservedUsage>();
  /** When this recorder's term began (its last start): earlier time was another leader's or process's. */
  #countingSince = Number.POSITIVE_INFINITY;

  constructor(options: UsageRecorderOptions) {
    this.#o = options;
    this.#flushMs = options.flushMs ?? 1000;
  }

  /**
   * Continues the store's open spans (those this recorder was not told of meanwhile), and starts the flushes: at a
   * process's start, and each time its replica begins to lead.
   */
  async start(): Promise<void> {
    this.#stopped = false;
    const now = this.#o.clock();
    // This term's start: what the store's open spans held before it, another leader (or process) counted.
    this.#countingSince = now;
    let earliest = now;
    for (const open of await this.#o.segments.open()) {
      if (this.#counted.has(open.workerId)) continue;
      const state = open.state as UsageState;
      const { state: _s, startedAt, ...holding } = open;
      const counted = {
        holding,
        lifecycle: state,
        span: state,
        continued: true,
        since: startedAt,
      };
      this.#counted.set(open.workerId, counted);
      earliest = Math.min(earliest, startedAt);
    }
    this.#nextHour = Math.min(this.#nextHour, nextHourAfter(earliest));
    this.#advance(now);
    this.#schedule();
  }

  workerState(holding: WorkerHolding, state: WorkerUsageState, told: number): void {
    this.#advance(told);
    const counted = this.#counted.get(holding.workerId);
    const at = Math.max(told, counted?.since ?? told);
    if (state === 'closed') {
      // Written even for a worker not counted here: the store may hold its open span (read by a start under way).
      if (counted) this.#observe(counted, at);
      this.#counted.delete(holding.workerId);
      this.#busy.delete(holding.workerId);
      this.#notes.push({ holding: counted?.holding ?? holding, at, state: null });
      return;
    }
    if (counted?.continued) {
      counted.continued = false;
      // Adopted after a restart: its health is learnt again (starting), but it went on serving meanwhile.
      if (state === 'starting' && (counted.span === 'idle' || counted.span === 'active')) return;
    }
    const busy = this.#busy.has(holding.workerId);
    const span = spanState(state, busy);
    if (counted?.span === span && sameHolding(counted.holding, holding)) {
      counted.lifecycle = state;
      return;
    }
    if (counted) this.#observe(counted, at);
    this.#counted.set(holding.workerId, {
      holding,
      lifecycle: state,
      span,
      continued: false,
      since: at,
    });
    this.#notes.push({ holding, at, state: span });
  }

  workerBusy(workerId: string, busy: boolean, at: number): void {
    if (busy) this.#busy.add(workerId);
    else this.#busy.delete(workerId);
    const counted = this.#counted.get(workerId);
    if (!counted) return;
    this.#advance(at);
    const span = spanState(counted.lifecycle, busy);
    if (span === counted.span) return;
    const since = Math.max(at, counted.since);
    this.#observe(counted, since);
    counted.span = span;
    counted.continued = false;
    counted.since = since;
    this.#notes.push({ holding: counted.holding, at: counted.since, state: span });
  }

  /**
   * The controller's workers after a whole pass: a counted worker it does not know ended while no one watched (its
   * container gone during a restart, or a leader change): closed now.
   */
  workersKnown(workerIds: ReadonlySet<string>, at: number): void {
    for (const [workerId, counted] of this.#counted)
      if (!workerIds.has(workerId)) this.workerState(counted.holding, 'closed', at);
  }

  /** Writes the notes taken so far (a stop's last flush, or a test's). */
  flush(): Promise<void> {
    // After the write under way (which took only the notes before it), so that every note noted so far is written.
    const write = (this.#flushing ?? Promise.resolve()).then(() => this.#write());
    this.#flushing = write;
    void write.finally(() => {
      if (this.#flushing === write) this.#flushing = undefined;
    });
    return write;
  }

  /**
   * Writes what is noted and stops: the open spans stay open in the store for the next recorder (a restart, or this
   * replica's next term), and a replica that no longer leads writes nothing (its hour splits included).
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== undefined) this.#o.timers.clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#flushing;
    await this.flush();
    // After the last flush's hour splits: the open spans' rest, up to now, counted for /metrics.
    const now = this.#o.clock();
    for (const counted of this.#counted.values()) this.#observe(counted, Math.max(now, counted.since));
    this.#counted.clear();
    this.#busy.clear();
    this.#nextHour = Number.POSITIVE_INFINITY;
  }

  /**
   * What this recorder counted since it started, its open spans up to `now` included: per owner, endpoint, GPU
   * product and state, the worker time, GPU time and host memory time (never less than an earlier answer).
   */
  observed(now: number): ObservedUsage[] {
    const sums = new Map([...this.#observed].map(([key, sum]) => [key, { ...sum }]));
    for (const counted of this.#counted.values())
      addObserved(sums, counted, Math.max(this.#countingSince, counted.since), now);
    return [...sums.values()];
  }

  /** Adds the counted worker's open span up to `until` (from this recorder's start at the earliest). */
  #observe(counted: Counted, until: number): void {
    addObserved(this.#observed, counted, Math.max(this.#countingSince, counted.since), until);
  }

  async #write(): Promise<void> {
    this.#advance(this.#o.clock());
    const notes = this.#notes;
    if (notes.length === 0) return;
    this.#notes = [];
    try {
      await this.#o.segments.apply(notes);
    } catch (error) {
      this.#notes = [...notes, ...this.#notes];
      this.#o.logger.warn(
        { err: error, notes: this.#notes.length },
        'cannot write usage; kept for the next try',
      );
    }
  }

  #schedule(): void {
    if (this.#stopped) return;
    this.#timer = this.#o.timers.setTimeout(() => {
      void this.flush().finally(() => this.#schedule());
    }, this.#flushMs);
  }

  /** Splits every open span at each UTC hour passed up to `at`. */
  #advance(at: number): void {
    while (this.#nextHour <= at) {
      for (const counted of this.#counted.values()) {
        if (counted.since >= this.#nextHour) continue;
        this.#observe(counted, this.#nextHour);
        counted.since = this.#nextHour;
        this.#notes.push({ holding: counted.holding, at: this.#nextHour, state: counted.span });
      }
      this.#nextHour += HOUR_MS;
    }
    if (this.#nextHour === Number.POSITIVE_INFINITY) this.#nextHour = nextHourAfter(at);
  }
}

function addObserved(sums: Map<string, ObservedUsage>, counted: Counted, from: number, until: number): void {
  if (!(until > from)) return;
  const { ownerId, endpointId, gpuProductId, gpuCount, hostMemoryBytes } = counted.holding;
  const key = `${ownerId}\0${endpointId}\0${gpuProductId}\0${counted.span}`;
  let sum = sums.get(key);
  if (!sum) {
    sum = { ownerId, endpointId, gpuProductId, state: counted.span, ms: 0, gpuMs: 0, memoryGbMs: 0 };
    sums.set(key, sum);
  }
  const ms = until - from;
  sum.ms += ms;
  sum.gpuMs += ms * gpuCount;
  sum.memoryGbMs += (ms * hostMemoryBytes) / 1e9;
}

function nextHourAfter(at: number): number {
  return (Math.floor(at / HOUR_MS) + 1) * HOUR_MS;
}

function sameHolding(a: WorkerHolding, b: WorkerHolding): boolean {
  return (
    a.gpuProductId === b.gpuProductId &&
    a.gpuCount === b.gpuCount &&
    a.hostMemoryBytes === b.hostMemoryBytes &&
    a.endpointId === b.endpointId
  );
}
