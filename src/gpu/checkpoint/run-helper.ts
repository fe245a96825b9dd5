/**
 * Runs the checkpoint helper for one operation under a deadline: the helper is a child process in a process group
 * of its own, killed (SIGKILL, the whole group) when the deadline passes, so that a driver call that never returns
 * (as on a stopped process, DESIGN.md section 7) costs a deadline, never Corral's own event loop.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  GpuCheckpointDeadlineError,
  GpuCheckpointHelperError,
} from '../../errors/gpu-checkpoint-catalogue.js';
import { systemTimers, type Timers } from '../../ports/clock.js';
import { type HelperAnswer, type HelperOp, parseHelperAnswer } from './helper-protocol.js';

/** How to start the helper: a program and the arguments before the operation's. */
export interface HelperCommand {
  command: string;
  args: readonly string[];
  /** Extra environment for the helper (e.g. CORRAL_LIBCUDA). */
  env?: Readonly<Record<string, string>>;
}

/**
 * The helper beside this module: `cuda-helper.js` where Corral runs built (dist/ or the bundle), or the TypeScript
 * source through tsx where it runs from source.
 */
export function defaultHelperCommand(): HelperCommand {
  const built = fileURLToPath(new URL('./cuda-helper.js', import.meta.url));
  if (existsSync(built)) return { command: process.execPath, args: [built] };
  const source = fileURLToPath(new URL('./cuda-helper.ts', import.meta.url));
  return { command: process.execPath, args: ['--import', 'tsx', source] };
}

/** What the helper inherits of Corral's environment: where to find programs and libcuda, never Corral's secrets. */
const INHERITED_ENV = ['PATH', 'LD_LIBRARY_PATH', 'CORRAL_LIBCUDA'] as const;

export function helperEnv(
  from: NodeJS.ProcessEnv,
  extra: Readonly<Record<string, string>> = {},
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const key of INHERITED_ENV) {
    const value = from[key];
    if (value !== undefined) env[key] = value;
  }
  return { ...env, ...extra };
}

/** The most of the helper's output kept: its answer is one short line. */
const OUTPUT_LIMIT = 64 * 1024;

/**
 * Runs `op` with `params` and resolves with the helper's answer, failed or not. Rejects with
 * GpuCheckpointDeadlineError past `deadlineMs` (the helper killed), GpuCheckpointHelperError when it exits without
 * an answer.
 */
export function runHelper(
  helper: HelperCommand,
  op: HelperOp,
  params: readonly string[],
  deadlineMs: number,
  timers: Timers = systemTimers,
): Promise<HelperAnswer> {
  return new Promise((resolve, reject) => {
    // Declared before the spawn's handlers can run; set right after it.
    let timer: unknown;
    const child = spawn(helper.command, [...helper.args, op, ...params], {
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: helperEnv(process.env, helper.env),
    });
    let stdout = '';
    let stderr = '';
    let settled = false;
    const settle = (done: () => void) => {
      if (settled) return;
      settled = true;
      timers.clearTimeout(timer);
      done();
    };
    const killGroup = () => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // Gone already.
      }
    };
    timer = timers.setTimeout(() => {
      killGroup();
      settle(() =>
        reject(
          new GpuCheckpointDeadlineError(`the driver call (${op}) did not return within ${deadlineMs} ms`, {
            metadata: { op, params, deadlineMs },
          }),
        ),
      );
    }, deadlineMs);
    child.stdout.on('data', (chunk: Buffer) => {
      if (stdout.length < OUTPUT_LIMIT) stdout += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      if (stderr.length < OUTPUT_LIMIT) stderr += chunk.toString('utf8');
    });
    child.on('error', (error) =>
      settle(() =>
        reject(
          new GpuCheckpointHelperError(`the checkpoint helper could not start: ${error.message}`, {
            metadata: { op, command: helper.command },
            cause: error,
          }),
        ),
      ),
    );
    child.on('close', (code, signal) => {
      const answer = parseHelperAnswer(stdout);
      settle(() => {
        if (answer) return resolve(answer);
        reject(
          new GpuCheckpointHelperError(
            `the checkpoint helper (${op}) exited without an answer (${signal ?? `exit ${code}`})`,
            { metadata: { op, code, signal, stderr: stderr.trim().split('\n').slice(-5).join('\n') } },
          ),
        );
      });
    });
  });
}
