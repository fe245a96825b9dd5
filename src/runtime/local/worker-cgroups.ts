/**
 * The local runtime's use of cgroups (cgroup-freezer.ts): which freezer its new workers get (found once, in a
 * directory of its own per state directory), and what it does to a worker's cgroup around the worker's life: make
 * it before the start, signal and kill everything in it on a stop, thaw a frozen one so it can take SIGTERM, and
 * remove it with the worker. Without a writable cgroup, `note` says why (the process group is all there is).
 */
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import {
  type FreezerChoice,
  type FreezerFound,
  findFreezer,
  killCgroup,
  makeCgroup,
  removeCgroup,
  setFrozen,
  signalCgroup,
  type WorkerCgroup,
} from '../cgroups/cgroup-freezer.js';
import { signalGroup } from './process-control.js';

export interface WorkerCgroupsOptions {
  choice: FreezerChoice;
  /** The runtime's state directory: its cgroup directory's name is made from it. */
  stateRoot: string;
  logger: Logger;
}

export class WorkerCgroups {
  readonly #o: WorkerCgroupsOptions;
  #found: FreezerFound | undefined;

  constructor(options: WorkerCgroupsOptions) {
    this.#o = options;
  }

  /** Why new workers get no cgroup (their process groups are stopped instead); undefined when they get one. */
  note(): string | undefined {
    const found = this.#freezer();
    return found.kind === 'process-group'
      ? `its process group is stopped (a process that left it runs on): ${found.reason}`
      : undefined;
  }

  /** A new worker's cgroup, or undefined where there is no usable one. Throws where it cannot be made. */
  make(workerId: string): WorkerCgroup | undefined {
    const found = this.#freezer();
    return found.kind === 'process-group' ? undefined : makeCgroup(found, workerId);
  }

  /** A signal to every process in the cgroup, those that left the process group too. */
  signal(cgroup: WorkerCgroup | undefined, signal: NodeJS.Signals): void {
    if (cgroup) signalCgroup(cgroup, signal);
  }

  /** What is left in a worker's cgroup once its leader has exited. */
  killAll(cgroup: WorkerCgroup | undefined): void {
    if (cgroup) killCgroup(cgroup);
  }

  /** A frozen worker takes SIGTERM only once thawed: its cgroup thawed, or SIGCONT to its group. */
  thawForStop(pid: number, cgroup: WorkerCgroup | undefined): void {
    if (!cgroup) {
      try {
        signalGroup(pid, 'SIGCONT');
      } catch (error) {
        this.#o.logger.warn({ pid, err: error }, 'cannot continue a worker process group to stop it');
      }
      return;
    }
    setFrozen(cgroup, false).catch((error: unknown) => {
      this.#o.logger.warn({ pid, err: error }, 'cannot thaw a worker cgroup to stop it');
    });
  }

  /** Every process left in the worker's cgroup killed, and the cgroup removed; a failure is logged. */
  async drop(workerId: string, cgroup: WorkerCgroup | undefined): Promise<void> {
    if (!cgroup) return;
    killCgroup(cgroup);
    await removeCgroup(cgroup).catch((error: unknown) => {
      this.#o.logger.warn({ workerId, err: error }, 'cannot remove a worker cgroup');
    });
  }

  #freezer(): FreezerFound {
    if (!this.#found) {
      // One directory per state directory, so that two runtimes on one host never share worker cgroups.
      const hash = createHash('sha256').update(this.#o.stateRoot).digest('hex').slice(0, 12);
      const found = findFreezer(this.#o.choice, `corral-${hash}`);
      this.#found = found;
      if (found.kind === 'process-group')
        this.#o.logger.debug(
          { reason: found.reason },
          'no cgroup for local workers: frozen by process group',
        );
      else this.#o.logger.debug({ cgroup: found.kind, dir: found.base }, 'local workers run in cgroups');
    }
    return this.#found;
  }
}
