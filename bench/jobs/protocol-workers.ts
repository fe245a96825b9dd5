/**
 * The throughput figure's protocol workers (bench/jobs/throughput.ts): they loop as runpod-python does with
 * `concurrency` N (`job-take-batch?batch_size=N&job_in_progress=0`, then one result POST per job taken), in a child
 * process of their own (workers-child.ts), so that their HTTP client does not share the event loop of the server
 * they measure: in a deployment, workers are other machines. The bare baseline is driven the same way.
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export interface WorkerUrls {
  take: string;
  /** The result URL with `$ID` in it. */
  result: string;
  token: string;
}

export interface DriveSettings {
  jobs: number;
  batch: number;
  /** A bound on the run. */
  limitMs: number;
}

/** What the workers saw: the run's time (first take to last result), jobs taken, and jobs taken more than once. */
export interface DriveFigures {
  ms: number;
  taken: number;
  ranTwice: number;
}

const CHILD_FILE = fileURLToPath(new URL('./workers-child.ts', import.meta.url));

/** The workers' loop: take a batch, post each result, until `jobs` results are in (or the bound passes). */
export async function drive(urls: readonly WorkerUrls[], settings: DriveSettings): Promise<DriveFigures> {
  const ran = new Map<string, number>();
  let done = 0;
  // The end is the last result, not the workers' return: those left polling an empty queue wait out the take's hold.
  let end = Number.NaN;
  const deadline = performance.now() + settings.limitMs;
  const start = performance.now();
  await Promise.all(
    urls.map(async (u) => {
      const headers = { Authorization: u.token };
      const take = `${u.take.replace('/job-take/', '/job-take-batch/')}&batch_size=${settings.batch}&job_in_progress=0`;
      while (done < settings.jobs && performance.now() < deadline) {
        const r = await fetch(take, { headers });
        if (r.status === 204) {
          await r.text();
          continue;
        }
        const got = (await r.json()) as { id: string }[];
        await Promise.all(
          got.map(async (job) => {
            ran.set(job.id, (ran.get(job.id) ?? 0) + 1);
            const res = await fetch(`${u.result.replace('$ID', job.id)}&isStream=false`, {
              method: 'POST',
              headers: { ...headers, 'Content-Type': 'application/x-www-form-urlencoded' },
              body: '{"output":1}',
            });
            await res.text();
            done++;
            if (done === settings.jobs) end = performance.now();
          }),
        );
      }
    }),
  );
  return {
    ms: (Number.isNaN(end) ? performance.now() : end) - start,
    taken: ran.size,
    ranTwice: [...ran.values()].filter((n) => n > 1).length,
  };
}

/** Runs `drive` in a child process (workers-child.ts, through tsx) and answers its figures. */
export function driveInChild(urls: readonly WorkerUrls[], settings: DriveSettings): Promise<DriveFigures> {
  return new Promise((resolve, reject) => {
    const child = fork(CHILD_FILE, [], {
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    let figures: DriveFigures | undefined;
    const timer = setTimeout(() => child.kill('SIGKILL'), settings.limitMs + 30_000);
    child.once('message', (message) => {
      figures = message as DriveFigures;
    });
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      if (figures) resolve(figures);
      else reject(new Error(`the workers' process ended without figures (code ${code}, signal ${signal})`));
    });
    child.send({ urls, settings });
  });
}
