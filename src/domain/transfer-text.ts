/**
 * How a transfer's amounts read in a message people watch: a size or rate in decimal units scaled to stay readable
 * (`812 B`, `200 kB`, `3.2 MB`, `410 MB`), and the time left in the unit that fits (`29 s`, `12 min`, `4 h 6 min`);
 * a model's download as a worker's `downloading` message and `corral models pull` say it. Pure.
 */
import { modelLabel } from './model-refs.js';

const UNITS = ['B', 'kB', 'MB', 'GB', 'TB'] as const;

/** `812 B`, `200 kB`, `3.2 MB`, `410 MB`, `15 GB`: decimal units, one decimal below 10. */
export function decimalSize(bytes: number): string {
  let value = Math.max(0, bytes);
  let unit = 0;
  while (value >= 999.5 && unit < UNITS.length - 1) {
    value /= 1000;
    unit += 1;
  }
  const digits = unit > 0 && value < 9.95 ? value.toFixed(1) : String(Math.round(value));
  return `${digits} ${UNITS[unit]}`;
}

/** `29 s` below 100 s, `12 min` below 100 min, else `4 h 6 min`; rounded up, so it never promises too soon. */
export function timeLeft(seconds: number): string {
  const s = Math.ceil(Math.max(0, seconds));
  if (s < 100) return `${s} s`;
  const minutes = Math.ceil(s / 60);
  if (minutes < 100) return `${minutes} min`;
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

const GB = 1e9;

/** `model org/name: 3.2 of 14.9 GB, 410 MB/s, about 29 s left`; a slow one `200 kB/s, about 4 h 6 min left`. */
export function progressMessage(progress: {
  name: string;
  revision: string;
  bytesDone: number;
  bytesTotal: number;
  bytesPerSecond: number;
}): string {
  const done = (progress.bytesDone / GB).toFixed(1);
  const total = (progress.bytesTotal / GB).toFixed(1);
  const head = `model ${modelLabel(progress)}: ${done} of ${total} GB`;
  if (progress.bytesPerSecond < 1) return head;
  const left = Math.max(0, progress.bytesTotal - progress.bytesDone) / progress.bytesPerSecond;
  return `${head}, ${decimalSize(progress.bytesPerSecond)}/s, about ${timeLeft(left)} left`;
}
