/**
 * Which kept outputs of one endpoint's ended workers go (pure): the most recent failed ones and the most recent
 * others (scaled down, replaced) are kept, each up to its own count, so that scaling never pushes out a crash's
 * output.
 */

export interface OutputRetention {
  /** Most recent failed workers kept per endpoint (at least 3). */
  failed: number;
  /** Most recent workers kept per endpoint that ended without failing. */
  other: number;
}

export const DEFAULT_OUTPUT_RETENTION: OutputRetention = { failed: 5, other: 5 };

export interface KeptOutputEntry {
  workerId: string;
  endedAt: number;
  failed: boolean;
}

/** The worker ids whose output goes; ties in endedAt are broken by worker id, the greater one counted newer. */
export function outputsToDrop(kept: readonly KeptOutputEntry[], retention: OutputRetention): string[] {
  const newestFirst = [...kept].sort(
    (a, b) => b.endedAt - a.endedAt || (a.workerId < b.workerId ? 1 : a.workerId > b.workerId ? -1 : 0),
  );
  const counts = { failed: 0, other: 0 };
  const drop: string[] = [];
  for (const entry of newestFirst) {
    const kind = entry.failed ? 'failed' : 'other';
    counts[kind] += 1;
    if (counts[kind] > retention[kind]) drop.push(entry.workerId);
  }
  return drop;
}
