/**
 * The processes a test run leaves behind: a worker of the local runtime outlives its `corral serve` by design (a
 * restarted serve adopts it), so a suite that removes its data directory, or a serve killed with SIGKILL, leaves the
 * worker running with nothing to stop it (106 `worker.mjs` processes had piled up on the development machine after a
 * day of runs). Every process a run starts inherits the run's mark (RUN_MARK_ENV, set by global-setup.ts before the
 * first test file starts); after the run, those left orphaned are killed. Linux only: elsewhere nothing is found.
 */
import { readdirSync, readFileSync } from 'node:fs';

/**
 * The variable that marks a run's processes. Not a `CORRAL_` one: the local runtime drops those from a worker's
 * environment (src/runtime/local/worker-env.ts), and the workers are what this finds.
 */
export const RUN_MARK_ENV = 'VITEST_CORRAL_RUN';

/** A process left running: orphaned (its parent gone, it belongs to init), and its process group's leader or not. */
export interface LeftProcess {
  pid: number;
  /** It leads its process group (the local runtime starts each worker as one): the whole group goes with it. */
  leader: boolean;
}

/**
 * The orphaned processes whose environment at their start held `mark` (`NAME=value`): what the run left running.
 * A process whose parent still runs is the run's own or goes with its parent (Vitest's workers, the esbuild service
 * its main process started after the mark was set, a worker's own children), and is left alone.
 */
export function orphansMarked(mark: string): LeftProcess[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  const found: LeftProcess[] = [];
  for (const entry of entries) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      // After the command's closing parenthesis: state, ppid, pgrp.
      const [, ppid, pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (ppid !== '1') continue;
      if (!readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(mark)) continue;
      found.push({ pid, leader: pgrp === String(pid) });
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  return found;
}

/** Kills what the run left running (SIGKILL: a frozen worker cannot act on SIGTERM); how many. */
export function killMarkedOrphans(mark: string): number {
  let killed = 0;
  for (const { pid, leader } of orphansMarked(mark)) {
    try {
      process.kill(leader ? -pid : pid, 'SIGKILL');
      killed += 1;
    } catch {
      // Gone meanwhile.
    }
  }
  return killed;
}
