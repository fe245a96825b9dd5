/**
 * The checkpoint helper: a process of its own that Corral kills at a driver call's deadline. One-shot
 * (`node cuda-helper.js <op> [pid] [lockTimeoutMs]`, the probe scripts' way): it loads libcuda.so.1 (`CORRAL_LIBCUDA`
 * names another library), makes the calls of its operation, and prints one JSON line (helper-protocol.ts), exit 0 on
 * success and 1 on failure. Serving (`node cuda-helper.js --serve`, Corral's way, helper-daemon.ts): it loads libcuda
 * and calls cuInit once, then answers one request line on stdin with one answer line on stdout, carrying its id.
 * Nothing else of Corral is loaded here, so that it starts fast.
 */
import { createInterface } from 'node:readline';
import { CUDA_RESULT_NAMES, LIBCUDA } from './cuda-abi.js';
import { type CudaDriver, driverApiVersion, loadCudaDriver } from './cuda-driver.js';
import { type DriverCall, resumeCalls, suspendCalls } from './helper-plan.js';
import {
  type HelperAnswer,
  type HelperOp,
  type HelperStep,
  isHelperOp,
  parseHelperRequest,
} from './helper-protocol.js';

const CALL_NAMES: Record<DriverCall, string> = {
  lock: 'cuCheckpointProcessLock',
  checkpoint: 'cuCheckpointProcessCheckpoint',
  restore: 'cuCheckpointProcessRestore',
  unlock: 'cuCheckpointProcessUnlock',
};

class CallFailed extends Error {
  constructor(
    readonly call: string,
    readonly result: number,
  ) {
    super(call);
  }
}

type Loaded = ReturnType<typeof loadCudaDriver>;

/** The driver loaded once per process, and whether cuInit succeeded already (a serving helper calls it once). */
interface Session {
  loaded?: Loaded;
  initialised: boolean;
}

/** One operation (`argv`: op, pid, lock timeout), its answer as data. */
function perform(argv: readonly (string | undefined)[], session: Session): HelperAnswer {
  const [opText = '', pidText, timeoutText] = argv;
  const steps: HelperStep[] = [];
  const answer = (value: HelperAnswer) => value;
  const fail = (error: Extract<HelperAnswer, { ok: false }>['error'], extra: { unlocked?: boolean } = {}) =>
    answer({ ok: false, op: opText, steps, error, ...extra });
  if (!isHelperOp(opText)) return fail({ kind: 'usage', message: `unknown operation "${opText}"` });
  const op: HelperOp = opText;
  const pid = Number(pidText);
  if (op !== 'driver-version' && !(Number.isInteger(pid) && pid > 0)) {
    return fail({ kind: 'usage', message: `${op} needs a process id, got "${pidText}"` });
  }
  const lockTimeoutMs = timeoutText === undefined ? 10_000 : Number(timeoutText);
  const library = process.env.CORRAL_LIBCUDA || undefined;
  session.loaded ??= loadCudaDriver(library);
  const loaded = session.loaded;
  if ('loadError' in loaded) {
    return fail({
      kind: 'no-libcuda',
      message: `libcuda not found: ${library ?? LIBCUDA}: ${loaded.loadError}`,
    });
  }
  if (op === 'driver-version') {
    // A driver without the checkpoint calls still answers its version, for the user's upgrade message.
    const version = loaded.driver ? loaded.driver.driverGetVersion().version : driverApiVersion(library);
    return answer({ ok: true, op, steps, driverVersion: version ?? 0, missing: loaded.missing });
  }
  const { driver } = loaded;
  if (!driver) return fail({ kind: 'missing-entry-points', missing: loaded.missing });
  const timed = <T>(call: string, fn: () => T): T => {
    const start = performance.now();
    const value = fn();
    steps.push({ call, ms: Math.round((performance.now() - start) * 100) / 100 });
    return value;
  };
  const check = (call: string, result: number) => {
    if (result !== 0) throw new CallFailed(call, result);
  };
  const run = (call: DriverCall) => {
    const name = CALL_NAMES[call];
    check(
      name,
      timed(name, () => callOf(driver, call, pid, lockTimeoutMs)),
    );
  };
  let state: number | undefined;
  try {
    if (!session.initialised) {
      check(
        'cuInit',
        timed('cuInit', () => driver.init()),
      );
      session.initialised = true;
    }
    const read = timed('cuCheckpointProcessGetState', () => driver.getState(pid));
    check('cuCheckpointProcessGetState', read.result);
    state = read.state;
    if (op === 'state') return answer({ ok: true, op, steps, state });
    if (op === 'suspend' || op === 'resume') {
      const calls = op === 'suspend' ? suspendCalls(state) : resumeCalls(state);
      if (calls === undefined) return fail({ kind: 'state', state });
      for (const call of calls) run(call);
    } else {
      run(op);
    }
    return answer({ ok: true, op, steps, state });
  } catch (error) {
    if (!(error instanceof CallFailed)) throw error;
    const failure = { kind: 'cuda' as const, call: error.call, result: error.result };
    const named = {
      ...failure,
      ...(CUDA_RESULT_NAMES[error.result] ? { name: CUDA_RESULT_NAMES[error.result] } : {}),
    };
    // A suspend whose checkpoint failed leaves the process locked: unlock it, so that it serves on.
    if (op === 'suspend' && error.call === CALL_NAMES.checkpoint) {
      return fail(named, { unlocked: driver.unlock(pid) === 0 });
    }
    return fail(named);
  }
}

function callOf(driver: CudaDriver, call: DriverCall, pid: number, lockTimeoutMs: number): number {
  if (call === 'lock') return driver.lock(pid, lockTimeoutMs);
  return driver[call](pid);
}

/** Serves request lines on stdin until it closes; a line that is no request is answered as a usage failure. */
function serve(): void {
  const session: Session = { initialised: false };
  const lines = createInterface({ input: process.stdin });
  lines.on('line', (line) => {
    const request = parseHelperRequest(line);
    const answer: HelperAnswer = request
      ? perform([request.op, String(request.pid ?? ''), ...(request.args ?? [])], session)
      : { ok: false, op: '', steps: [], error: { kind: 'usage', message: 'not a request line' } };
    process.stdout.write(`${JSON.stringify({ ...answer, id: request?.id ?? null })}\n`);
  });
  lines.on('close', () => process.exit(0));
}

const argv = process.argv.slice(2);
if (argv[0] === '--serve') serve();
else {
  const answer = perform(argv, { initialised: false });
  process.stdout.write(`${JSON.stringify(answer)}\n`);
  process.exit(answer.ok ? 0 : 1);
}
