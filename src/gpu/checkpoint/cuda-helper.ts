/**
 * The checkpoint helper: a process of its own that Corral starts for each driver call and kills at the call's
 * deadline (`node cuda-helper.js <op> [pid] [lockTimeoutMs]`). It loads libcuda.so.1 (`CORRAL_LIBCUDA` names another
 * library), makes the calls of its operation, and prints one JSON line (helper-protocol.ts), exit 0 on success and 1
 * on failure. Nothing else of Corral is loaded here, so that it starts fast.
 */
import { CUDA_RESULT_NAMES, LIBCUDA } from './cuda-abi.js';
import { type CudaDriver, driverApiVersion, loadCudaDriver } from './cuda-driver.js';
import { type DriverCall, resumeCalls, suspendCalls } from './helper-plan.js';
import { type HelperAnswer, type HelperOp, type HelperStep, isHelperOp } from './helper-protocol.js';

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

function answer(value: HelperAnswer): never {
  process.stdout.write(`${JSON.stringify(value)}\n`);
  process.exit(value.ok ? 0 : 1);
}

function main(argv: string[]): never {
  const [opText = '', pidText, timeoutText] = argv;
  const steps: HelperStep[] = [];
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
  const loaded = loadCudaDriver(library);
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
    check(
      'cuInit',
      timed('cuInit', () => driver.init()),
    );
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

main(process.argv.slice(2));
