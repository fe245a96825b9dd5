/** GPU detection on this machine through nvidia-smi; parsing its output is inventory.ts's. */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { type Gpu, NVIDIA_SMI_QUERY, parseNvidiaSmi } from './inventory.js';

const run = promisify(execFile);

export type GpuDetection = { gpus: Gpu[]; problem?: undefined } | { gpus: []; problem: string };

/** Reads this machine's GPUs with nvidia-smi; says why there are none instead of failing. */
export async function detectGpus(command = 'nvidia-smi'): Promise<GpuDetection> {
  try {
    const [query, banner] = await Promise.all([
      run(command, NVIDIA_SMI_QUERY, { timeout: 15_000 }),
      run(command, [], { timeout: 15_000 }),
    ]);
    return { gpus: parseNvidiaSmi(query.stdout, banner.stdout) };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const problem =
      code === 'ENOENT'
        ? `${command} was not found (no NVIDIA driver on this machine)`
        : `${command} failed: ${(error as Error).message.split('\n')[0]}`;
    return { gpus: [], problem };
  }
}
