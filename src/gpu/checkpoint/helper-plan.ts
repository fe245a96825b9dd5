/**
 * Which driver calls suspend and resume make, from the state the driver reports for the process: each goes only as
 * far as it must, so that a suspend or resume cut short (a deadline, a restart of Corral) can be asked again.
 */
import { processStateOf } from './cuda-abi.js';

export type DriverCall = 'lock' | 'checkpoint' | 'restore' | 'unlock';

/** The calls left to reach `checkpointed` from a CUprocessState value, or undefined where none leads there. */
export function suspendCalls(state: number): DriverCall[] | undefined {
  const calls: Record<string, DriverCall[] | undefined> = {
    running: ['lock', 'checkpoint'],
    locked: ['checkpoint'],
    checkpointed: [],
  };
  return calls[processStateOf(state)];
}

/** The calls left to reach `running` from a CUprocessState value, or undefined where none leads there. */
export function resumeCalls(state: number): DriverCall[] | undefined {
  const calls: Record<string, DriverCall[] | undefined> = {
    checkpointed: ['restore', 'unlock'],
    locked: ['unlock'],
    running: [],
  };
  return calls[processStateOf(state)];
}
