/**
 * What Linux's /proc says about a worker process: the parsers of /proc/<pid>/stat, status and environ and the
 * decisions taken from them (is this still our process? how busy was it?) are pure; the readers below them only
 * fetch the text and answer undefined where there is no /proc or no such process.
 */
import fs from 'node:fs';

/** Assumed USER_HZ (the kernel's clock ticks per second for /proc times); 100 on every common Linux. */
export const CLOCK_TICKS = 100;

export interface ProcStat {
  /** Field 3: R, S, D, Z (zombie), X (dead), ... */
  state: string;
  /** Field 22, in clock ticks since boot: with the pid, it tells our process from a recycled pid. */
  startTime: string;
  /** utime + stime (fields 14 and 15). */
  cpuTicks: number;
}

/** The fields of /proc/<pid>/stat we use; undefined when the text is not such a line. */
export function parseProcStat(text: string): ProcStat | undefined {
  // comm (field 2) may hold spaces and parentheses: fields from 3 on follow the last ')'.
  const close = text.lastIndexOf(')');
  if (close < 0) return undefined;
  const fields = text.slice(close + 2).split(' ');
  const state = fields[0];
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  const startTime = fields[19];
  if (!state || !startTime || !Number.isFinite(utime) || !Number.isFinite(stime)) return undefined;
  return { state, startTime, cpuTicks: utime + stime };
}

/** Resident memory from /proc/<pid>/status; 0 where the kernel gives no VmRSS line (a zombie, a kernel thread). */
export function parseRssBytes(status: string): number {
  const kb = /^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1];
  return kb === undefined ? 0 : Number(kb) * 1024;
}

/** What /proc shows of a pid that answers signal 0; `stat` undefined where it could not be read. */
export interface ProcView {
  /** Whether this host has a /proc at all; without one, liveness is all we can check. */
  procAvailable: boolean;
  stat?: ProcStat;
  /** NUL-separated `KEY=value` entries; undefined where unreadable (a hardened /proc). */
  environ?: string;
}

/** Whether the process seen is the worker we started rather than a recycled pid, as far as /proc lets us tell. */
export function isSameProcess(view: ProcView, expected: { workerId: string; startTime?: string }): boolean {
  if (!view.stat) return !view.procAvailable;
  if (view.stat.state === 'Z' || view.stat.state === 'X') return false;
  if (expected.startTime !== undefined && view.stat.startTime !== expected.startTime) return false;
  // An empty environ is a process that cleared it, or a kernel that hides it: the start time has to do.
  if (view.environ === undefined || view.environ === '') return true;
  return view.environ.split('\0').includes(`CORRAL_WORKER_ID=${expected.workerId}`);
}

export interface CpuSample {
  ticks: number;
  /** Milliseconds on the runtime's clock. */
  at: number;
}

/** CPU use between two samples, in percent of one core, to one decimal. */
export function cpuPercent(previous: CpuSample, current: CpuSample): number {
  const elapsedSeconds = Math.max(0.001, (current.at - previous.at) / 1000);
  const percent = Math.max(0, ((current.ticks - previous.ticks) / CLOCK_TICKS / elapsedSeconds) * 100);
  return Math.round(percent * 10) / 10;
}

export function readProcStat(pid: number): ProcStat | undefined {
  const text = readProcFile(pid, 'stat');
  return text === undefined ? undefined : parseProcStat(text);
}

export function readRssBytes(pid: number): number | undefined {
  const text = readProcFile(pid, 'status');
  return text === undefined ? undefined : parseRssBytes(text);
}

/** Everything isSameProcess needs to know about `pid`. */
export function readProcView(pid: number): ProcView {
  const stat = readProcStat(pid);
  if (!stat) return { procAvailable: fs.existsSync('/proc/self/stat') };
  const environ = readProcFile(pid, 'environ');
  return { procAvailable: true, stat, ...(environ === undefined ? {} : { environ }) };
}

function readProcFile(pid: number, name: string): string | undefined {
  try {
    return fs.readFileSync(`/proc/${pid}/${name}`, 'utf8');
  } catch {
    return undefined; // no /proc, no such process, or not ours to read
  }
}
