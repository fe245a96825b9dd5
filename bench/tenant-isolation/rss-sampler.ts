/**
 * The server's memory while the suite runs: VmRSS from /proc/<pid>/status every SAMPLE_MS (bench/memory-readings.ts
 * reads it), the largest sample of each phase and when it came, and VmHWM (the kernel's own peak, which no sampling
 * interval can miss). Past RSS_CAP_MIB it calls `onCap` once: on a shared machine the suite ends the attack there.
 */
import { memoryOf } from '../memory-readings.js';
import { SAMPLE_MS } from './settings.js';

export interface PhaseMemory {
  samples: number;
  maxRssMiB: number;
  /** When the largest sample came, in seconds since the phase began. */
  maxAtS: number;
  /** VmHWM at the end of the phase: the process's peak RSS since it started. */
  hwmMiB: number;
}

export class RssSampler {
  readonly #pid: number;
  readonly #capMiB: number;
  readonly #onCap: () => void;
  #timer: NodeJS.Timeout | undefined;
  #phase = { started: 0, samples: 0, maxRssMiB: 0, maxAtS: 0 };
  #lastHwmMiB = Number.NaN;
  #capped = false;

  constructor(options: { pid: number; capMiB: number; onCap: () => void }) {
    this.#pid = options.pid;
    this.#capMiB = options.capMiB;
    this.#onCap = options.onCap;
  }

  /** Starts sampling a phase (ending the one before, if any). */
  startPhase(): void {
    this.#phase = { started: performance.now(), samples: 0, maxRssMiB: 0, maxAtS: 0 };
    this.#timer ??= setInterval(() => this.#sample(), SAMPLE_MS);
    this.#sample();
  }

  /** The phase's figures; sampling goes on until `stop`. */
  endPhase(): PhaseMemory {
    this.#sample();
    const { samples, maxRssMiB, maxAtS } = this.#phase;
    return { samples, maxRssMiB, maxAtS, hwmMiB: this.#lastHwmMiB };
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  get capped(): boolean {
    return this.#capped;
  }

  #sample(): void {
    const memory = memoryOf(this.#pid);
    // Gone, or a zombie whose status has no memory lines left (killed at the cap): its last reading stands.
    if (!memory || !Number.isFinite(memory.rssMiB) || !Number.isFinite(memory.hwmMiB)) return;
    this.#lastHwmMiB = memory.hwmMiB;
    const phase = this.#phase;
    phase.samples += 1;
    if (memory.rssMiB > phase.maxRssMiB) {
      phase.maxRssMiB = memory.rssMiB;
      phase.maxAtS = (performance.now() - phase.started) / 1000;
    }
    if (!this.#capped && memory.rssMiB > this.#capMiB) {
      this.#capped = true;
      this.#onCap();
    }
  }
}
