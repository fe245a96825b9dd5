/**
 * The suspended tier on a real GPU: a PyTorch process holding GB of GPU memory suspended and resumed through Corral's
 * checkpoint helper; restore plus its first answer against the driver's own restore time (the helper's step). Skipped
 * with the reason where the driver has no checkpoint API (no GPU, simulated, old driver).
 */
import { spawn } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { gpuCheckpointFor } from '../../src/app/gpu-checkpoint.js';
import { defaultHelperCommand, runHelper } from '../../src/gpu/checkpoint/run-helper.js';
import { devNullLogger } from '../controller/settings.js';
import { median } from '../gateway/report.js';
import { formatMs, loadAverage, table } from '../support.js';
import { GPU_HOLD_GB, GPU_ROUNDS, getOnce, RESTORE_TARGET_RATIO } from './settings.js';

const GPU_PROC = fileURLToPath(new URL('../../scripts/gpu-check/gpu_proc.py', import.meta.url));

export async function benchGpuRestore(): Promise<void> {
  console.log(
    `\n-- GPU: restore + first answer vs the driver's restore, a process holding ${GPU_HOLD_GB} GB, ${GPU_ROUNDS} rounds --`,
  );
  const setup = await gpuCheckpointFor({ gpus: { kind: 'auto' }, runtime: 'local', logger: devNullLogger() });
  if (!setup.availability.available) {
    console.log(`SKIPPED: ${setup.availability.reason}`);
    return;
  }
  const helper = defaultHelperCommand();
  const holder = spawn('python3', [GPU_PROC, 'hold', String(GPU_HOLD_GB)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    const ready = await readyLine(holder.stdout);
    const rows: string[][] = [];
    const ratios: number[] = [];
    for (let round = 0; round < GPU_ROUNDS; round++) {
      const suspended = await runHelper(helper, 'suspend', [String(ready.pid), '10000'], 120_000);
      if (!suspended.ok) throw new Error(`suspend failed: ${JSON.stringify(suspended.error)}`);
      const start = performance.now();
      const resumed = await runHelper(helper, 'resume', [String(ready.pid)], 120_000);
      if (!resumed.ok) throw new Error(`resume failed: ${JSON.stringify(resumed.error)}`);
      const answer = JSON.parse((await getOnce(ready.port, '/check')).body) as { words: number };
      const total = performance.now() - start;
      if (answer.words !== ready.checksum.words) throw new Error('the restored tensors differ');
      const restore =
        resumed.steps.find((step) => step.call === 'cuCheckpointProcessRestore')?.ms ?? Number.NaN;
      const checkpoint =
        suspended.steps.find((step) => step.call === 'cuCheckpointProcessCheckpoint')?.ms ?? Number.NaN;
      ratios.push(total / restore);
      rows.push([
        String(round + 1),
        formatMs(checkpoint),
        formatMs(restore),
        formatMs(total),
        (total / restore).toFixed(2),
      ]);
    }
    console.log(
      table(['round', 'checkpoint (ms)', 'driver restore (ms)', 'resume + first answer (ms)', 'ratio'], rows),
    );
    const ratio = median(ratios);
    console.log(
      `median ratio ${ratio.toFixed(2)} (target within ${RESTORE_TARGET_RATIO}x: ${ratio <= RESTORE_TARGET_RATIO ? 'PASS' : 'FAIL'}); ` +
        `CUDA driver API ${setup.availability.driverVersion}; load ${loadAverage()}`,
    );
  } finally {
    holder.kill('SIGKILL');
  }
}

interface Ready {
  pid: number;
  port: number;
  checksum: { words: number };
}

async function readyLine(stdout: NodeJS.ReadableStream): Promise<Ready> {
  for await (const line of createInterface({ input: stdout })) {
    if (line.startsWith('READY ')) return JSON.parse(line.slice(6)) as Ready;
  }
  throw new Error('the GPU process ended before it was ready');
}
