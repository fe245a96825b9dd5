/**
 * Folds the JSON messages of `POST /images/create` into one PullProgress. Pure state machine, no I/O.
 */
import type { PullProgress } from '../types.js';

/** One message of the pull stream (only the fields used here). */
export interface PullMessage {
  id?: string;
  status?: string;
  progressDetail?: { current?: number; total?: number };
  error?: string;
  errorDetail?: { message?: string };
}

interface Layer {
  current: number;
  total?: number;
  done: boolean;
}

const DONE = new Set(['Download complete', 'Pull complete', 'Already exists']);
const LAYER_STATUSES = new Set([
  'Pulling fs layer',
  'Waiting',
  'Downloading',
  'Verifying Checksum',
  'Download complete',
  'Extracting',
  'Pull complete',
  'Already exists',
]);

/** The error a pull stream reported in-band (the HTTP status of a pull is 200 even when it fails). */
export function pullError(message: PullMessage): string | undefined {
  return message.error ?? message.errorDetail?.message;
}

/** Decimal megabytes, as `docker pull` prints them; one decimal below 10 MB. */
function megabytes(bytes: number): string {
  const mb = bytes / 1_000_000;
  return mb < 10 ? mb.toFixed(1) : String(Math.round(mb));
}

export class PullProgressTracker {
  readonly #layers = new Map<string, Layer>();
  #percent: number | undefined;
  #lastKey = '';
  readonly #image: string;

  constructor(image: string) {
    this.#image = image;
  }

  /** Takes one message; returns the new progress when it changed enough to report, else undefined. */
  update(message: PullMessage): PullProgress | undefined {
    if (message.id && message.status && LAYER_STATUSES.has(message.status)) this.#updateLayer(message);
    // `Digest: ...` then `Status: Downloaded newer image for ...` close a successful pull.
    if (!message.id && /^(Digest|Status):/.test(message.status ?? '')) this.#percent = 100;
    const progress = this.current();
    const key = `${progress.percent}|${progress.message}`;
    if (key === this.#lastKey) return undefined;
    this.#lastKey = key;
    return progress;
  }

  /**
   * One message the worker's state shows as is: `pulling nginx:latest: 42% (120/285 MB)` once sizes are known,
   * `pulling nginx:latest (1/3 layers)` before.
   */
  current(): PullProgress {
    const layers = [...this.#layers.values()];
    if (this.#percent === undefined) {
      const done = layers.filter((layer) => layer.done).length;
      const counted = layers.length > 0 ? ` (${done}/${layers.length} layers)` : '';
      return { message: `pulling ${this.#image}${counted}` };
    }
    const sized = layers.filter((layer) => layer.total !== undefined);
    const total = sized.reduce((sum, layer) => sum + (layer.total ?? 0), 0);
    const current = sized.reduce((sum, layer) => sum + layer.current, 0);
    const bytes = total > 0 ? ` (${megabytes(current)}/${megabytes(total)} MB)` : '';
    return { percent: this.#percent, message: `pulling ${this.#image}: ${this.#percent}%${bytes}` };
  }

  #updateLayer(message: PullMessage): void {
    const id = message.id ?? '';
    const layer = this.#layers.get(id) ?? { current: 0, done: false };
    this.#layers.set(id, layer);
    const detail = message.progressDetail;
    if (message.status === 'Downloading' && detail?.total && detail.total > 0) {
      layer.total = detail.total;
      layer.current = Math.min(detail.current ?? 0, detail.total);
    }
    if (message.status && DONE.has(message.status)) {
      layer.done = true;
      if (layer.total !== undefined) layer.current = layer.total;
    }
    this.#recompute();
  }

  /**
   * Bytes downloaded over bytes known, times the share of layers to download whose size is known yet; layers
   * already present do not count. Never goes backwards; 100 only once the engine says the pull is complete.
   */
  #recompute(): void {
    const layers = [...this.#layers.values()];
    const sized = layers.filter((layer) => layer.total !== undefined);
    const total = sized.reduce((sum, layer) => sum + (layer.total ?? 0), 0);
    if (total === 0) return;
    const current = sized.reduce((sum, layer) => sum + layer.current, 0);
    const sizedShare =
      sized.length / layers.filter((layer) => !(layer.done && layer.total === undefined)).length;
    const percent = Math.floor((current / total) * 100 * sizedShare);
    this.#percent = Math.min(99, Math.max(this.#percent ?? 0, percent));
  }
}
