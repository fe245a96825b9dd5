/**
 * The GPU checkpointer the runtimes suspend idle workers with (docs/workers.md, Idle tiers): none yet, so the
 * suspended tier is off with the reason "no GPU checkpoint support built". The implementation that reaches the CUDA
 * driver's checkpoint API through a killable helper process (ports/gpu-checkpoint.ts) is built on another branch;
 * its factory plugs in here (and says itself why it is unavailable: simulated GPUs, a driver without the API).
 */
import type { Config } from '../config/config.js';
import type { GpuCheckpointer } from '../ports/gpu-checkpoint.js';

export function gpuCheckpointerFor(_config: Config): GpuCheckpointer | undefined {
  return undefined;
}
