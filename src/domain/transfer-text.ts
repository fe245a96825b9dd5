/**
 * How a transfer's amounts read in a message people watch: a size or rate in decimal units scaled to stay readable
 * (`812 B`, `200 kB`, `3.2 MB`, `410 MB`), and the time left in the unit that fits (`29 s`, `12 min`, `4 h 6 min`).
 * Pure.
 */

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
