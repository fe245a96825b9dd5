/**
 * The process's open-file limit (RLIMIT_NOFILE): read from /proc/self/limits, and its soft limit raised to the hard
 * one with util-linux's `prlimit --pid` where it is below it. node has no setrlimit of its own to call; node itself
 * raises the soft limit at start on most systems, so the raise here is the fallback for where it did not.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** Soft and hard limits on open files; Infinity: unlimited. */
export interface FileLimit {
  soft: number;
  hard: number;
}

/** The `Max open files` line of a /proc/<pid>/limits text; undefined when it has none. */
export function parseFileLimit(procLimits: string): FileLimit | undefined {
  const match = /^Max open files\s+(\S+)\s+(\S+)/m.exec(procLimits);
  if (!match) return undefined;
  const value = (text: string) => (text === 'unlimited' ? Number.POSITIVE_INFINITY : Number(text));
  const soft = value(match[1] as string);
  const hard = value(match[2] as string);
  return Number.isNaN(soft) || Number.isNaN(hard) ? undefined : { soft, hard };
}

/** The limit of process `pid` (this one by default); undefined where /proc is not there (macOS) or unreadable. */
export function readFileLimit(pid: number | 'self' = 'self'): FileLimit | undefined {
  try {
    return parseFileLimit(readFileSync(`/proc/${pid}/limits`, 'utf8'));
  } catch {
    return undefined;
  }
}

export interface RaisedFileLimit {
  /** The limit now; undefined where it cannot be read. */
  limit: FileLimit | undefined;
  /** The soft limit before, when this raised it. */
  raisedFrom?: number;
  /** Why the soft limit stays below the hard one, when it does. */
  notRaised?: string;
}

/**
 * Raises the soft limit of process `pid` to its hard limit where it is below, with `prlimit` (a process may raise
 * its own soft limit, or one of its user's, up to the hard one without privileges).
 */
export function raiseFileLimit(pid: number = process.pid): RaisedFileLimit {
  const before = readFileLimit(pid);
  if (before === undefined || before.soft >= before.hard) return { limit: before };
  const hard = before.hard === Number.POSITIVE_INFINITY ? 'unlimited' : String(before.hard);
  const run = spawnSync('prlimit', ['--pid', String(pid), `--nofile=${hard}:${hard}`], {
    encoding: 'utf8',
    timeout: 5_000,
  });
  const after = readFileLimit(pid);
  if (after !== undefined && after.soft > before.soft) return { limit: after, raisedFrom: before.soft };
  const reason = run.error ? `prlimit: ${(run.error as NodeJS.ErrnoException).code}` : run.stderr.trim();
  return { limit: after ?? before, notRaised: reason || `prlimit exited with ${run.status}` };
}
