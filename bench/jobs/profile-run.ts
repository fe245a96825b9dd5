/**
 * A CPU profile of this process over one part of a bench run (the throughput figure's take-and-result phase, not
 * the submission before it), when CORRAL_BENCH_JOBS_CPU_PROF names a directory: `<name>.cpuprofile` there, for
 * Chrome's DevTools or any .cpuprofile reader.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';

export const CPU_PROF_ENV = 'CORRAL_BENCH_JOBS_CPU_PROF';

/** Runs `run`, profiled into `<dir>/<name>.cpuprofile` when `dir` is set. */
export async function profiled<T>(dir: string | undefined, name: string, run: () => Promise<T>): Promise<T> {
  if (!dir) return run();
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  try {
    return await run();
  } finally {
    const { profile } = await session.post('Profiler.stop');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, `${name}.cpuprofile`), JSON.stringify(profile));
    session.disconnect();
  }
}
