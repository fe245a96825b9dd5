/**
 * The processes the gateway suite starts: every child is tracked so that all of them are stopped at the end (and
 * on exit, as a last resort); the suite's own roles (gateway, bare proxy, load generator) are forked from
 * child.ts; their CPU time is read from /proc.
 */
import { type ChildProcess, fork, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { WORKER_SCRIPT } from '../../test/support/test-image.js';
import { REPO_ROOT } from './settings.js';

export const ROLE_ENV = 'CORRAL_BENCH_GATEWAY_ROLE';
export const UPSTREAM_ENV = 'CORRAL_BENCH_UPSTREAM_PORT';
export const LOADGEN_ENV = 'CORRAL_BENCH_LOADGEN';
export type Role = 'gateway' | 'bare' | 'loadgen';

const CHILD_FILE = fileURLToPath(new URL('./child.ts', import.meta.url));
/** USER_HZ: clock ticks per second in /proc/<pid>/stat (100 on every common Linux). */
const CLOCK_TICKS = 100;

const children = new Set<ChildProcess>();

export function track(child: ChildProcess): ChildProcess {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

export function killAllSync(): void {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}

/** Stops a child: `signal`, then SIGKILL after `graceMs`. */
export async function stopChild(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM', graceMs = 3_000) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

/** The environment children get: ours minus the suite's roles. */
function childEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env[ROLE_ENV];
  delete env[UPSTREAM_ENV];
  delete env[LOADGEN_ENV];
  return { ...env, ...extra };
}

/** One of the suite's own roles in a child process with an IPC channel, run through tsx. */
export function forkRole(role: Role, env: Record<string, string>, execArgv: string[] = []): ChildProcess {
  return track(
    fork(CHILD_FILE, [], {
      cwd: REPO_ROOT,
      execArgv: ['--import', 'tsx', ...execArgv],
      env: childEnv({ [ROLE_ENV]: role, ...env }),
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    }),
  );
}

/** The test worker with this node, on 127.0.0.1:<port>, its log thrown away. */
export function spawnWorker(port: number): ChildProcess {
  return track(
    spawn(process.execPath, [WORKER_SCRIPT], {
      env: childEnv({ PORT: String(port), HOST: '127.0.0.1', GRACE_MS: '1000' }),
      stdio: 'ignore',
    }),
  );
}

/** CPU time (user + system) a process has used, in ms; undefined once it is gone. */
export function cpuMs(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return undefined;
  }
}

/** The processes whose parent is `ppid` (nginx's workers). */
export function childPids(ppid: number | undefined): number[] {
  if (ppid === undefined) return [];
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) === ppid) pids.push(Number(name));
    } catch {
      // Gone meanwhile.
    }
  }
  return pids;
}

export function totalCpuMs(pids: number[]): number {
  return pids.reduce((sum, pid) => sum + (cpuMs(pid) ?? 0), 0);
}
