/**
 * The CUDA driver's process checkpoint calls, reached through koffi (an FFI with prebuilt binaries: no compiler on
 * the user's machine). Only the helper process loads this file: a driver call that never returns then hangs the
 * helper, which Corral kills at its deadline, never Corral itself. Every argument structure is passed as 64 zeroed
 * bytes, the lock's with its timeout in the first 32-bit word (cuda-abi.ts).
 */
import koffi, { type LibraryHandle } from 'koffi';
import { CHECKPOINT_ARGS_BYTES, CHECKPOINT_ENTRY_POINTS, LIBCUDA } from './cuda-abi.js';

/** The calls, each answering its CUresult (0 is CUDA_SUCCESS). */
export interface CudaDriver {
  driverGetVersion(): { result: number; version: number };
  init(): number;
  getState(pid: number): { result: number; state: number };
  lock(pid: number, timeoutMs: number): number;
  checkpoint(pid: number): number;
  restore(pid: number): number;
  unlock(pid: number): number;
}

export type DriverLoad =
  | { driver: CudaDriver; missing: [] }
  | { driver?: undefined; missing: string[] }
  | { driver?: undefined; missing?: undefined; loadError: string };

/** Loads libcuda (or `library`, for tests and odd installs) and binds the calls; says what is missing instead. */
export function loadCudaDriver(library: string = LIBCUDA): DriverLoad {
  let lib: LibraryHandle;
  try {
    lib = koffi.load(library);
  } catch (error) {
    return { loadError: (error as Error).message };
  }
  const bind = (definition: string) => {
    try {
      return lib.func(definition);
    } catch {
      return undefined;
    }
  };
  const driverGetVersion = bind('int cuDriverGetVersion(int *version)');
  const init = bind('int cuInit(unsigned int flags)');
  const getState = bind('int cuCheckpointProcessGetState(int pid, int *state)');
  const calls = Object.fromEntries(
    CHECKPOINT_ENTRY_POINTS.slice(1).map((name) => [name, bind(`int ${name}(int pid, void *args)`)]),
  );
  const missing = [
    ...(driverGetVersion ? [] : ['cuDriverGetVersion']),
    ...(init ? [] : ['cuInit']),
    ...(getState ? [] : ['cuCheckpointProcessGetState']),
    ...Object.entries(calls)
      .filter(([, fn]) => fn === undefined)
      .map(([name]) => name),
  ];
  const {
    cuCheckpointProcessLock,
    cuCheckpointProcessCheckpoint,
    cuCheckpointProcessRestore,
    cuCheckpointProcessUnlock,
  } = calls;
  if (
    !driverGetVersion ||
    !init ||
    !getState ||
    !cuCheckpointProcessLock ||
    !cuCheckpointProcessCheckpoint ||
    !cuCheckpointProcessRestore ||
    !cuCheckpointProcessUnlock
  ) {
    return { missing };
  }
  const zeroed = () => Buffer.alloc(CHECKPOINT_ARGS_BYTES);
  return {
    missing: [],
    driver: {
      driverGetVersion() {
        const out = new Int32Array(1);
        const result = driverGetVersion(out) as number;
        return { result, version: out[0] ?? 0 };
      },
      init: () => init(0) as number,
      getState(pid) {
        const out = new Int32Array(1);
        const result = getState(pid, out) as number;
        return { result, state: out[0] ?? 0 };
      },
      lock(pid, timeoutMs) {
        const args = zeroed();
        args.writeUInt32LE(timeoutMs, 0);
        return cuCheckpointProcessLock(pid, args) as number;
      },
      checkpoint: (pid) => cuCheckpointProcessCheckpoint(pid, zeroed()) as number,
      restore: (pid) => cuCheckpointProcessRestore(pid, zeroed()) as number,
      unlock: (pid) => cuCheckpointProcessUnlock(pid, zeroed()) as number,
    },
  };
}

/** Only the version, for a driver too old to have the checkpoint calls: what to tell the user to upgrade from. */
export function driverApiVersion(library: string = LIBCUDA): number | undefined {
  try {
    const fn = koffi.load(library).func('int cuDriverGetVersion(int *version)');
    const out = new Int32Array(1);
    return fn(out) === 0 ? out[0] : undefined;
  } catch {
    return undefined;
  }
}
