/**
 * Figures 5 and 6 on one stack: one unmeasured round of each first, then the wake runs interleaved with their
 * baselines, then the scale-up runs; a failed run is a problem reported, not the end of the suite.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { reportScale, type ScaleRun, scaleRun } from './scale.js';
import { SCALE_RUNS, WAKE_RUNS } from './settings.js';
import { startStack } from './stack.js';
import { baselineRun, reportWake, type WakeRun, wakeRun } from './wake.js';

export async function controlPlaneFigures(dir: string, problems: string[], summary: string[][]) {
  const run = randomBytes(3).toString('hex');
  const stack = await startStack(join(dir, 'stack'));
  const wakes: WakeRun[] = [];
  const baselines: number[] = [];
  const scales: ScaleRun[] = [];
  try {
    // One unmeasured round of each, so that no measured run pays for a cold page cache or unoptimised code.
    await baselineRun().catch((error: unknown) =>
      problems.push(`warm-up baseline: ${(error as Error).message}`),
    );
    await wakeRun(stack, `warm-${run}`).catch((error: unknown) =>
      problems.push(`warm-up wake: ${(error as Error).message}`),
    );
    for (let i = 0; i < WAKE_RUNS; i++) {
      try {
        baselines.push(await baselineRun());
      } catch (error) {
        problems.push(`baseline ${i + 1}: ${(error as Error).message}`);
      }
      try {
        wakes.push(await wakeRun(stack, `wake-${run}-${i}`));
      } catch (error) {
        problems.push(`wake ${i + 1}: ${(error as Error).message}`);
      }
    }
    for (let i = 0; i < SCALE_RUNS; i++) {
      try {
        scales.push(await scaleRun(stack, `scale-${run}-${i}`));
      } catch (error) {
        problems.push(`scale-up ${i + 1}: ${(error as Error).message}`);
      }
    }
  } finally {
    await stack.close();
  }
  reportWake(wakes, baselines, summary);
  reportScale(scales, summary);
}
