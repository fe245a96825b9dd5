/**
 * The processes that hold GPU memory, from `nvidia-smi --query-compute-apps`. nvidia-smi run on the host reports
 * host pids, those of processes in containers too; Corral must run in the host's pid namespace for them to match the
 * pids it is asked about.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { GpuProcess } from '../../ports/gpu-checkpoint.js';

const run = promisify(execFile);

export const COMPUTE_APPS_QUERY = [
  '--query-compute-apps=pid,gpu_uuid,used_memory',
  '--format=csv,noheader,nounits',
] as const;

const MIB = 1024 * 1024;

/**
 * Rows of `pid, gpu_uuid, used_memory` (MiB): one process on two GPUs is two rows. A memory nvidia-smi cannot tell
 * (`[N/A]`, `[Not Supported]`) is 0 bytes; a line that is not such a row (a message) is skipped.
 */
export function parseComputeApps(csv: string): GpuProcess[] {
  return csv.split('\n').flatMap((line) => {
    const cells = line.split(',').map((cell) => cell.trim());
    if (cells.length !== 3) return [];
    const [pidText = '', gpuUuid = '', usedText = ''] = cells;
    const pid = Number(pidText);
    if (!/^\d+$/.test(pidText) || pid <= 0 || !/^(GPU|MIG)-/.test(gpuUuid)) return [];
    const used = /^\d+$/.test(usedText) ? Number(usedText) * MIB : 0;
    return [{ pid, gpuUuid, usedBytes: used }];
  });
}

/** The compute processes on this machine's GPUs now. */
export async function readComputeApps(command = 'nvidia-smi', timeoutMs = 15_000): Promise<GpuProcess[]> {
  const { stdout } = await run(command, [...COMPUTE_APPS_QUERY], { timeout: timeoutMs });
  return parseComputeApps(stdout);
}
