/**
 * Worker processes on this host: starting one detached in its own process group with its output going to its log
 * file (and, given a cgroup, inside it before the program runs: a shell writes its own pid to the cgroup's
 * `cgroup.procs`, then execs the program, so that nothing the program starts is outside it), signalling the group, telling our process from a recycled pid, waiting for an exit, stopping a group
 * (SIGTERM, grace, SIGKILL), and the free host port a worker gets as PORT.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import { RuntimeError } from '../types.js';
import { isSameProcess, readProcView } from './proc.js';

/** How long a SIGKILLed group gets to be gone. */
export const KILL_WAIT_MS = 5_000;
/** How often an exit is looked for when no exit event will come (adopted processes are not our children). */
const EXIT_POLL_MS = 50;

export interface StartOptions {
  program: string;
  args: string[];
  env: Record<string, string>;
  /** Truncated, then given the process's stdout and stderr. */
  logPath: string;
  /** Errors the child reports once started (a failed signal through it, say). */
  onError: (error: Error) => void;
  /** The `cgroup.procs` file of the cgroup the process must run in from its first instruction. */
  cgroupProcs?: string;
}

/** Exit code of the shell that could not enter the worker's cgroup (it never runs the program). */
export const CGROUP_ENTRY_FAILED = 125;
/** `$0` is the cgroup.procs file, `$@` the program and its arguments. */
const ENTER_CGROUP = `echo $$ > "$0" || { echo "corral: cannot enter the worker's cgroup ($0)" >&2; exit ${CGROUP_ENTRY_FAILED}; }; exec "$@"`;

/**
 * The program's path as a spawn would find it (a name without a slash is looked up on the env's PATH), so that a
 * missing program fails the create rather than the shell that enters the cgroup. Undefined when none is found.
 */
export function resolveProgram(program: string, pathValue: string | undefined): string | undefined {
  const runnable = (file: string) => {
    try {
      fs.accessSync(file, fs.constants.X_OK);
      return fs.statSync(file).isFile();
    } catch {
      return false;
    }
  };
  if (program.includes('/')) return runnable(program) ? program : undefined;
  for (const dir of (pathValue ?? '/usr/local/bin:/usr/bin:/bin').split(':')) {
    const file = `${dir === '' ? '.' : dir}/${program}`;
    if (runnable(file)) return file;
  }
  return undefined;
}

/** What to spawn: the program itself, or the shell that enters the cgroup and execs it. */
function commandOf(options: StartOptions): { file: string; args: string[] } {
  if (options.cgroupProcs === undefined) return { file: options.program, args: options.args };
  const resolved = resolveProgram(options.program, options.env.PATH);
  if (resolved === undefined)
    throw new RuntimeError('RUNTIME_ERROR', `cannot start ${JSON.stringify(options.program)}: not found`);
  return { file: '/bin/sh', args: ['-c', ENTER_CGROUP, options.cgroupProcs, resolved, ...options.args] };
}

/** A started child; its pid is known, and it neither keeps this process alive nor is killed with it. */
export type StartedProcess = ChildProcess & { pid: number };

/** Starts the process detached, in its own group, so that it outlives a restart of Corral. */
export async function startProcess(options: StartOptions): Promise<StartedProcess> {
  const command = commandOf(options);
  const logFd = fs.openSync(options.logPath, 'w');
  let child: ChildProcess;
  try {
    child = spawn(command.file, command.args, {
      env: options.env,
      detached: true,
      stdio: ['ignore', logFd, logFd],
    });
  } finally {
    fs.closeSync(logFd);
  }
  if (child.pid === undefined) {
    const error = await new Promise<Error>((resolve) => child.once('error', resolve));
    const message = `cannot start ${JSON.stringify(options.program)}: ${error.message}`;
    throw new RuntimeError('RUNTIME_ERROR', message, { cause: error });
  }
  child.on('error', options.onError);
  child.unref();
  return child as StartedProcess;
}

/** Sends `signal` to the process group led by `pid`; false when the group is gone. Other failures throw. */
export function signalGroup(pid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pid, signal);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw error;
  }
}

/** The process we started is alive: the pid answers, and /proc says it is not a recycled pid. */
export function processMatches(identity: { pid: number; workerId: string; startTime?: string }): boolean {
  try {
    process.kill(identity.pid, 0);
  } catch {
    return false; // ESRCH: gone; EPERM: someone else's process.
  }
  return isSameProcess(readProcView(identity.pid), identity);
}

/** A child's exit as the runtime reports it (pure): a signal is 128 + its number, as a shell says. */
export function exitOf(
  code: number | null,
  signal: NodeJS.Signals | null,
): { exitCode: number; message: string } {
  if (code !== null) return { exitCode: code, message: `exited with code ${code}` };
  const number = signal ? (os.constants.signals[signal] ?? 0) : 0;
  return { exitCode: 128 + number, message: `killed by ${signal ?? 'a signal'}` };
}

/** How waitForExit learns of an exit. */
export interface ExitWatch {
  exited(): boolean;
  /** Looks again, for exits no event reports; may make exited() true. */
  look(): void;
  /** Calls `wake` when the exit is seen; returns the way to stop. */
  onExit(wake: () => void): () => void;
}

/** Resolves true once the process has exited, false after `ms`. */
export function waitForExit(watch: ExitWatch, ms: number): Promise<boolean> {
  watch.look();
  if (watch.exited()) return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (value: boolean) => {
      clearTimeout(timer);
      clearInterval(poll);
      stop();
      resolve(value);
    };
    const stop = watch.onExit(() => done(true));
    const timer = setTimeout(() => done(false), ms);
    const poll = setInterval(() => {
      watch.look();
      if (watch.exited()) done(true);
    }, EXIT_POLL_MS);
  });
}

/**
 * SIGTERM, SIGKILL after `graceMs`, then SIGKILL once more for children that ignored SIGTERM after their leader
 * went (as a container runtime kills the whole container). `send` signals the group. Resolves whether the leader
 * exited.
 */
export async function stopGroup(
  send: (signal: NodeJS.Signals) => void,
  graceMs: number,
  watch: ExitWatch,
): Promise<boolean> {
  send('SIGTERM');
  let exited = await waitForExit(watch, graceMs);
  if (!exited) {
    send('SIGKILL');
    exited = await waitForExit(watch, KILL_WAIT_MS);
  }
  send('SIGKILL');
  return exited;
}

/** An ExitWatch over a child of ours: its exit event says it all. */
export function childExitWatch(child: ChildProcess): ExitWatch {
  return {
    exited: () => child.exitCode !== null || child.signalCode !== null,
    look: () => {},
    onExit: (wake) => {
      child.once('exit', wake);
      return () => child.off('exit', wake);
    },
  };
}

/** A port free on every interface at the time of asking (bind 0, read, close), and not one in `reserved`. */
export async function freePort(reserved: ReadonlySet<number>): Promise<number> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const port = await new Promise<number>((resolve, reject) => {
      const server = net.createServer();
      server.unref();
      server.once('error', reject);
      server.listen(0, () => {
        const address = server.address();
        const value = typeof address === 'object' && address ? address.port : 0;
        server.close(() => resolve(value));
      });
    }).catch((error: unknown) => {
      const message = `cannot find a free port: ${error instanceof Error ? error.message : String(error)}`;
      throw new RuntimeError('RUNTIME_ERROR', message, { cause: error });
    });
    if (port > 0 && !reserved.has(port)) return port;
  }
  throw new RuntimeError('RUNTIME_ERROR', 'cannot find a free port');
}
