/**
 * What the checkpoint helper process is asked (its command line, or one request line on stdin when it serves) and
 * answers (one JSON line on stdout), shared by the helper (`cuda-helper.ts`) and Corral's side (`run-helper.ts`,
 * `helper-daemon.ts`). Plain data only, so that both ends and the tests
 * agree on one shape.
 */

/** The helper's operations; `suspend` and `resume` are the port's, each one process of the helper. */
export const HELPER_OPS = [
  'driver-version',
  'state',
  'lock',
  'checkpoint',
  'restore',
  'unlock',
  'suspend',
  'resume',
] as const;

export type HelperOp = (typeof HELPER_OPS)[number];

/** One driver call the helper made, with how long it took (milliseconds, the helper's own clock). */
export interface HelperStep {
  call: string;
  ms: number;
}

/** Why the helper could not do what it was asked. */
export type HelperFailure =
  /** libcuda.so.1 could not be loaded: no driver on the machine, or not on the loader's path. */
  | { kind: 'no-libcuda'; message: string }
  /** The library loaded but lacks entry points: a driver older than 570. */
  | { kind: 'missing-entry-points'; missing: string[] }
  /** A driver call answered other than CUDA_SUCCESS. */
  | { kind: 'cuda'; call: string; result: number; name?: string }
  /** The process is in a state the operation cannot start from (a CUprocessState value, e.g. 3 failed). */
  | { kind: 'state'; state: number }
  /** The command line was wrong (a bug in Corral, not the driver's). */
  | { kind: 'usage'; message: string };

export type HelperAnswer =
  | {
      ok: true;
      op: HelperOp;
      steps: HelperStep[];
      /** driver-version: cuDriverGetVersion's value, e.g. 13000. */
      driverVersion?: number;
      /** driver-version: the checkpoint entry points libcuda lacks (then the API is unavailable). */
      missing?: string[];
      /** state, and the state that suspend and resume found before they acted: a CUprocessState value. */
      state?: number;
    }
  | {
      ok: false;
      op: HelperOp | string;
      steps: HelperStep[];
      error: HelperFailure;
      /** suspend: whether the process was unlocked again after its checkpoint failed (it then runs on). */
      unlocked?: boolean;
    };

export function isHelperOp(value: string): value is HelperOp {
  return (HELPER_OPS as readonly string[]).includes(value);
}

/** The helper's answer from its stdout: the last line that parses as an answer, or undefined. */
export function parseHelperAnswer(stdout: string): HelperAnswer | undefined {
  const lines = stdout.split('\n').filter((line) => line.trim().startsWith('{'));
  for (const line of lines.reverse()) {
    try {
      const value = JSON.parse(line) as unknown;
      if (
        typeof value === 'object' &&
        value !== null &&
        typeof (value as { ok?: unknown }).ok === 'boolean'
      ) {
        return value as HelperAnswer;
      }
    } catch {
      // Not the answer: a line the driver or Node printed.
    }
  }
  return undefined;
}

/** One request to a serving helper (`cuda-helper.js --serve`): one JSON line on its stdin. */
export interface HelperRequest {
  /** Echoed in the answer's `id`, so that an answer is matched to its request. */
  id: number;
  op: HelperOp;
  pid?: number;
  /** What follows the pid on the one-shot command line: the lock's timeout (ms) for suspend and lock. */
  args?: string[];
}

/** A serving helper's answer line: the answer, with the id of its request (null for a line that was no request). */
export type ServedAnswer = HelperAnswer & { id: number | null };

/** A request from one stdin line, or undefined where the line is not one. */
export function parseHelperRequest(line: string): HelperRequest | undefined {
  try {
    const value = JSON.parse(line) as Partial<HelperRequest> | null;
    if (typeof value !== 'object' || value === null) return undefined;
    if (typeof value.id !== 'number' || typeof value.op !== 'string' || !isHelperOp(value.op))
      return undefined;
    if (value.pid !== undefined && typeof value.pid !== 'number') return undefined;
    if (
      value.args !== undefined &&
      !(Array.isArray(value.args) && value.args.every((a) => typeof a === 'string'))
    ) {
      return undefined;
    }
    return { id: value.id, op: value.op, pid: value.pid, args: value.args };
  } catch {
    return undefined;
  }
}

/** A serving helper's answer from one stdout line, or undefined where the line is not one. */
export function parseServedAnswer(line: string): ServedAnswer | undefined {
  const answer = parseHelperAnswer(line) as ServedAnswer | undefined;
  if (answer === undefined || (typeof answer.id !== 'number' && answer.id !== null)) return undefined;
  return answer;
}
