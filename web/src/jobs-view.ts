/**
 * What the Jobs section shows, as plain functions of the API's answers: the statuses in order, which actions a
 * status allows, durations and sizes for people, and a job's input or output as text (pretty JSON when whole, the
 * cut text with a marker naming its full size when the server truncated it).
 */
import { JOB_STATUSES, type JobStatusName, type WireClippedText } from '../../src/client/index.js';

export const STATUS_ORDER: readonly JobStatusName[] = JOB_STATUSES;

/** A queued or running job can be cancelled. */
export function canCancel(status: JobStatusName): boolean {
  return status === 'IN_QUEUE' || status === 'IN_PROGRESS';
}

/** A FAILED or TIMED_OUT job can be retried. */
export function canRetry(status: JobStatusName): boolean {
  return status === 'FAILED' || status === 'TIMED_OUT';
}

/** `IN_PROGRESS` as people read it: `in progress`. */
export function statusLabel(status: JobStatusName): string {
  return status.toLowerCase().replace('_', ' ');
}

/** A job's delay, execution time or policy: `850 ms`, `12.4 s`, `3 min 5 s`, `24 h`; `-` for one not got to. */
export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '-';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const seconds = Math.round(ms / 1000);
  if (seconds < 3600) return joined(Math.floor(seconds / 60), 'min', seconds % 60, 's');
  const minutes = Math.round(seconds / 60);
  return joined(Math.floor(minutes / 60), 'h', minutes % 60, 'min');
}

/** `3 min 5 s`, or `10 min` when the smaller unit is 0. */
function joined(big: number, bigUnit: string, small: number, smallUnit: string): string {
  return small === 0 ? `${big} ${bigUnit}` : `${big} ${bigUnit} ${small} ${smallUnit}`;
}

/** A size in bytes: `812 B`, `64.0 KiB`, `20.0 MiB`. */
export function byteSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}

/** A stored JSON text for display: indented when it is whole JSON; `note` says when it was cut, and its size. */
export function shownText(clipped: WireClippedText): { text: string; note: string | undefined } {
  if (clipped.truncated) {
    return {
      text: `${clipped.text}…`,
      note: `Truncated: the first ${clipped.text.length.toLocaleString('en-US')} characters of ${byteSize(clipped.bytes)}.`,
    };
  }
  try {
    return { text: JSON.stringify(JSON.parse(clipped.text), null, 2), note: undefined };
  } catch {
    return { text: clipped.text, note: undefined };
  }
}

/** The counts line for a screen reader and the section's title: `3 queued, 1 in progress, 12 completed`. */
export function countsLine(counts: Partial<Record<JobStatusName, number>>): string {
  const parts = STATUS_ORDER.filter((s) => (counts[s] ?? 0) > 0).map(
    (s) => `${counts[s]} ${s === 'IN_QUEUE' ? 'queued' : statusLabel(s)}`,
  );
  return parts.length === 0 ? 'no jobs' : parts.join(', ');
}
